# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""What ``$expand`` costs others, under gunicorn (2 workers x 2 threads).

At :data:`VMS` VMs, ``$expand=*($levels=3)`` of the Systems would fetch
far more than the 1,000 resources an expansion may: it is refused, and
plain GETs beside 20 of them keep their latency. Once an expansion has
sampled a System, the next one past the bound is refused before the
collection is rendered (:mod:`sushy_kubevirt.redfish.expandbound`): no
resource rendered, no Kubernetes API call, and at most twice the CPU of
a warm System GET.
"""

import os
import threading

import pytest
import requests
from sushy_tools.emulator import main
from tests import backend
from tests.functional.emulator import harness
from tests.functional import latency

from sushy_kubevirt.redfish import query

VMS = 300
SYSTEMS = '/redfish/v1/Systems'
EXPAND = {'$expand': '*($levels=3)'}
TWO = {'$expand': '.($levels=2)'}
#: GETs of each side of a CPU comparison, and its repeats.
COUNT = 300
REPEATS = 3


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=VMS)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def config_file(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('expand')
    return harness.write_config(tmp / 'emulator.conf', sim.write_kubeconfig(
        str(tmp / 'kubeconfig')))


def _members(url):
    return [m['@odata.id'] for m in requests.get(
        url + SYSTEMS, timeout=30).json()['Members']]


@pytest.fixture(scope='module')
def gunicorn(config_file, tmp_path_factory):
    process = harness.emulator_process(
        'gunicorn', config_file, tmp_path_factory.mktemp('gunicorn'))
    try:
        url = process.start().wait_ready().url
        harness.wait_until(lambda: len(_members(url)) == VMS, 60, 0.5,
                           'every VM listed')
        # Both workers warm: each System rendered once by each.
        for path in _members(url)[:20] * 4:
            requests.get(url + path, timeout=10,
                         headers={'Connection': 'close'})
        yield process
    finally:
        process.stop()


def _refused(answer):
    """A 400 of the resource cap, or a 503 of the expansions' limit."""
    code = answer.json()['error']['@Message.ExtendedInfo'][0]['MessageId']
    if answer.status_code == 503:
        return code.endswith('.ServiceTemporarilyUnavailable') and \
            int(answer.headers['Retry-After']) > 0
    return answer.status_code == 400 and \
        code.endswith('.QueryParameterOutOfRange') and \
        'at most 1000 resources' in answer.text


def test_plain_gets_keep_their_latency_beside_20_expansions(gunicorn):
    url = gunicorn.url
    paths = _members(url)[:20]
    before = latency.gets(url, paths)
    answers = []

    def expand():
        try:
            answers.append(requests.get(url + SYSTEMS, params=EXPAND,
                                        timeout=60))
        except requests.RequestException as exc:
            answers.append(exc)
    expansions = [threading.Thread(target=expand) for _ in range(20)]
    for thread in expansions:
        thread.start()
    loud = latency.gets(url, paths, until=lambda: len(answers) == 20)
    for thread in expansions:
        thread.join(60)
    after = latency.gets(url, paths)
    latency.assert_kept(loud, before, after)
    assert len(answers) == 20 and all(
        isinstance(a, requests.Response) and _refused(a)
        for a in answers), answers


def _cpu_ms(workers, session, url, params, count):
    """CPU milliseconds per GET of ``count`` GETs of ``url``."""
    before = latency.cpu_seconds(workers)
    for _ in range(count):
        answer = session.get(url, params=params, timeout=20)
        assert answer.status_code == (400 if params else 200), answer.text
    return 1000.0 * (latency.cpu_seconds(workers) - before) / count


def test_a_refused_expansion_costs_at_most_two_warm_gets(sim, gunicorn):
    url = gunicorn.url
    workers = latency.children(gunicorn.proc.pid)
    assert len(workers) == 2, workers
    system = url + _members(url)[0]
    with requests.Session() as session:
        # Each worker has sampled a System; this one is decided first.
        for _ in range(8):
            requests.get(url + SYSTEMS, params=EXPAND, timeout=20,
                         headers={'Connection': 'close'})
        calls = _calls(sim)
        warm, refused = [], []
        for _ in range(REPEATS):
            warm.append(_cpu_ms(workers, session, system, None, COUNT))
            refused.append(_cpu_ms(workers, session, url + SYSTEMS, EXPAND,
                                   COUNT))
        assert _calls(sim) == calls
    # Counted in clock ticks, the least of each side: load only adds.
    tick = 1000.0 / os.sysconf('SC_CLK_TCK') / COUNT
    assert min(refused) <= 2 * min(warm) + 2 * tick, (warm, refused)


def test_a_refused_expansion_is_decided_before_it_renders(
        sim, config_file, monkeypatch):
    fetched, listed = [], []
    fetch = query._fetched
    monkeypatch.setattr(query, '_fetched', lambda app, path: fetched.append(
        path) or fetch(app, path))
    with harness.InProcess(config_file) as server:
        server.wait_synced()
        view = main.app.view_functions['system_collection_resource']
        monkeypatch.setitem(
            main.app.view_functions, 'system_collection_resource',
            lambda *a, **k: listed.append(1) or view(*a, **k))
        harness.wait_until(lambda: len(_members(server.url)) == VMS, 60,
                           0.5, 'every VM listed')
        del listed[:]
        first = _expand(server.url, EXPAND)
        # The first one renders the collection, fetches one sample System.
        assert len(fetched) == 1 and len(listed) == 1, (fetched, listed)

        def decided_first():
            # A System that changed since it was sampled is sampled again.
            del fetched[:], listed[:]
            calls = _calls(sim)
            answers = [_expand(server.url, EXPAND) for _ in range(5)]
            assert all(a == first for a in answers), answers
            return not fetched and not listed and _calls(sim) == calls
        harness.wait_until(decided_first, 60, 0.5,
                           'refused before rendering, no API call')
        # An expansion of as many as the bound is Flask's, which
        # estimates the same number (and is stopped there).
        _expand(server.url, TWO)
        links = query.SAMPLED[main.app.systems]['.'][2]
        estimates = []
        real = query._Expander.estimate

        def estimate(self, found, levels):
            estimates.append(real(self, found, levels))
            raise query.refusal('stopped')
        monkeypatch.setattr(query._Expander, 'estimate', estimate)
        monkeypatch.setattr(query, 'MAX_EXPANDED', VMS * (1 + links))
        del listed[:]
        answer = requests.get(server.url + SYSTEMS, params=TWO, timeout=30)
        assert answer.status_code == 400 and 'stopped' in answer.text
        assert estimates == [query.MAX_EXPANDED] and listed, estimates


def _calls(sim):
    """The simulator's API calls so far, without log_complete's own."""
    backend.log_complete(sim)
    return [e for e in harness.api_calls(sim) if e['path'] != '/version']


def _expand(url, params):
    answer = requests.get(url + SYSTEMS, params=params, timeout=30)
    assert answer.status_code == 400 and _refused(answer), answer.text
    return answer.json()
