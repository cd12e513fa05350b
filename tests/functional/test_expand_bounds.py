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
far more than the 1,000 resources an expansion may: it is refused, at
about the cost of a plain GET of the collection, and plain GETs beside
20 of them keep their latency.
"""

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


def test_a_refused_expansion_costs_about_a_plain_get(gunicorn):
    url = gunicorn.url
    workers = latency.children(gunicorn.proc.pid)
    assert len(workers) == 2, workers
    for _ in range(2):   # each worker warm
        requests.get(url + SYSTEMS, params=EXPAND, timeout=20)
    plain = latency.cpu_seconds(workers)
    for _ in range(10):
        assert requests.get(url + SYSTEMS, timeout=20).status_code == 200
    refused = latency.cpu_seconds(workers)
    for _ in range(10):
        answer = requests.get(url + SYSTEMS, params=EXPAND, timeout=20)
        assert answer.status_code == 400 and _refused(answer), answer.text
    done = latency.cpu_seconds(workers)
    # Counted in clock ticks, with the workers' own background work.
    assert done - refused <= 2 * (refused - plain) + 0.1, (
        done - refused, refused - plain)


def test_a_refused_expansion_renders_one_sample(sim, config_file,
                                                monkeypatch):
    fetched = []
    fetch = query._fetch
    monkeypatch.setattr(query, '_fetch',
                        lambda app, path: fetched.append(path) or fetch(
                            app, path))
    with harness.InProcess(config_file) as server:
        server.wait_synced()
        harness.wait_until(lambda: len(_members(server.url)) == VMS, 60,
                           0.5, 'every VM listed')
        answer = main.app.test_client().get(SYSTEMS, query_string=EXPAND)
        assert answer.status_code == 400, answer.text
        # One System, whose links times the Systems are too many.
        assert len(fetched) == 1, fetched
        answer = main.app.test_client().get(SYSTEMS, query_string={
            '$expand': '.'})
        assert answer.status_code == 200
        assert len(answer.json['Members']) == VMS
        assert len(fetched) == 1 + VMS
