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

"""Sessions read from each process's watch, over HTTP, two processes.

One emulator in this process, one in a subprocess, on one cluster, as
Ironic uses them: a login through one, polls through the other. A warm
token request makes no API call; a token made a moment ago on the other
process works at once; a logout reaches the other process within the
watch's delivery delay (measured here; :data:`conftest.LOGOUT_BOUND`),
and with the simulator delaying the watches, that delay is the bound.
"""

import statistics
import time

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.conformance import conftest
from tests.functional.emulator import harness

from sushy_kubevirt.accounts import sessionstore

USER, PASSWORD = 'admin', 'S3cret-password'
SESSIONS = '/redfish/v1/SessionService/Sessions'
SYSTEMS = '/redfish/v1/Systems'
LOGOUT_BOUND = conftest.LOGOUT_BOUND
#: Seconds the simulator holds back each event of a lagging watch.
LAG = 0.5

sim = conftest.sim_fixture(2)


def _config(sim, tmp, **extra):
    htpasswd = tmp / 'htpasswd'
    htpasswd.write_text('%s:%s\n' % (USER, bcrypt.hashpw(
        PASSWORD.encode(), bcrypt.gensalt(4)).decode()))
    return harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(htpasswd), **extra)


@pytest.fixture(scope='module')
def urls(sim, tmp_path_factory):
    with harness.pair(_config(sim, tmp_path_factory.mktemp('watched')),
                      tmp_path_factory) as pair:
        yield pair


def login(url):
    answer = requests.post(url + SESSIONS, timeout=30, json={
        'UserName': USER, 'Password': PASSWORD})
    assert answer.status_code == 201, answer.text
    return answer.headers['X-Auth-Token'], answer.headers['Location']


def status(url, token, path=SYSTEMS):
    return requests.get(url + path, headers={'X-Auth-Token': token},
                        timeout=30).status_code


def logout(url, token, location):
    return requests.delete(url + location, headers={
        'X-Auth-Token': token}, timeout=30).status_code


def _session_reads(sim):
    return [e for e in conftest.api_calls(sim)
            if 'secrets' in e.get('path', '')]


def test_a_warm_token_request_makes_no_api_call(urls, sim):
    here, other = urls
    token, _ = login(here)
    for url in (here, other):
        harness.wait_until(lambda: status(url, token) == 200, 10, 0.05,
                           'the token works')
    # Once each watch delivered the session, a request is cache reads.
    conftest.api_calls(sim)
    sim.request_log.clear()
    harness.wait_until(lambda: status(here, token) == 200 and status(
        other, token) == 200 and not _session_reads(sim), 10, 0.05,
        'both watches hold the session')
    sim.request_log.clear()
    for _ in range(5):
        assert status(here, token) == 200
        assert status(other, token) == 200
    assert conftest.api_calls(sim) == []
    # The log does see the emulators' calls: a logout is one.
    assert logout(other, token, login(other)[1]) == 204
    assert 'delete' in [e['verb'] for e in conftest.api_calls(sim)]


def test_a_session_made_a_moment_ago_elsewhere_works_at_once(urls):
    """Log in through one process, use the token at once on the other.

    Its watch may not hold the session yet: a live GET finds it (made
    sure of by :func:`test_the_logout_bound_is_the_watch_delay`).
    """
    here, other = urls
    for source, target in ((here, other), (other, here)) * 10:
        token, location = login(source)
        assert status(target, token) == 200
        assert status(target, token, location) == 200
        assert logout(target, token, location) == 204
        harness.wait_until(lambda: status(source, token) == 401,
                           LOGOUT_BOUND, 0.01, 'the logout seen where the '
                           'login was')


def _logout_delay(here, other):
    """Seconds from a logout through ``here`` to a 401 through ``other``."""
    token, location = login(other)
    harness.wait_until(lambda: status(other, token) == 200, 10, 0.05,
                       'the token works')
    assert status(here, token) == 200
    assert logout(here, token, location) == 204
    start = time.monotonic()
    assert status(here, token) == 401   # where it was deleted: at once
    harness.wait_until(lambda: status(other, token) == 401, LOGOUT_BOUND,
                       0.002, 'the logout seen by the other process')
    return time.monotonic() - start


def test_a_logout_reaches_the_other_process_within_the_bound(urls):
    here, other = urls
    delays = [_logout_delay(*pair) for pair in ((here, other),
                                                (other, here)) * 10]
    print('logout seen elsewhere after: median %.1f ms, max %.1f ms'
          % (statistics.median(delays) * 1000, max(delays) * 1000))
    assert max(delays) < LOGOUT_BOUND


def _read_live(sim, url, token, location):
    """Whether a request with ``token`` to ``url`` read its session live."""
    name = sessionstore.PREFIX + location.rpartition('/')[2]
    sim.request_log.clear()
    assert status(url, token) == 200
    return [e['verb'] for e in conftest.api_calls(sim)
            if e['path'].endswith(name)] == ['get']


@pytest.mark.skipif(backend.REAL, reason='the simulator delays the watches')
def test_the_logout_bound_is_the_watch_delay(sim, tmp_path_factory):
    """Every event of the session Secrets' watches comes :data:`LAG` late.

    A token made through one process works at once on the other (read
    live); a logout through one reaches the other with its watch's event.
    """
    lag = sim.faults.event_delay(LAG, path='secrets$',
                                 query={'watch': None}, times=None)
    try:
        with harness.pair(_config(sim, tmp_path_factory.mktemp('lag')),
                          tmp_path_factory) as (here, other):
            for url in (here, other):   # their watches start, lagging
                status(url, login(url)[0])
            token, location = login(here)
            assert _read_live(sim, other, token, location)
            harness.wait_until(lambda: not _read_live(
                sim, other, token, location), LAG * 10, 0.05,
                'the lagging watch delivered the session')
            assert logout(here, token, location) == 204
            start = time.monotonic()
            assert status(here, token) == 401
            assert status(other, token) == 200   # its watch lags
            harness.wait_until(lambda: status(other, token) == 401,
                               LAG + LOGOUT_BOUND, 0.01,
                               'the logout seen by the other process')
            assert time.monotonic() - start > LAG / 2
    finally:
        sim.faults.remove(lag)


def test_use_anywhere_keeps_a_session_and_idleness_ends_it(
        sim, tmp_path_factory):
    """A 3 s SessionTimeout: used through one process, alive on both."""
    config = _config(sim, tmp_path_factory.mktemp('timeout'),
                     SUSHY_EMULATOR_KUBEVIRT_SESSION_TIMEOUT=3)
    with harness.pair(config, tmp_path_factory) as (here, other):
        token, location = login(here)
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            assert status(here, token) == 200
            time.sleep(0.5)   # the pace of a poll
        assert status(other, token) == 200
        # Unused (no request) until the cluster's last use is 3 s old.
        harness.wait_until(lambda: int(time.time()) - _last_used(
            sim, location) > 3, 10, 0.1, 'the session idle')
        assert status(other, token) == 401
        assert status(here, token) == 401


def _last_used(sim, location):
    status_, body = backend.admin_request(
        sim, 'GET', '/api/v1/namespaces/default/secrets/%s%s' % (
            sessionstore.PREFIX, location.rpartition('/')[2]))
    assert status_ == 200, body
    return int(body['metadata']['annotations'][sessionstore.USED])
