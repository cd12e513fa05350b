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

"""A flood of refused logins costs the API server a few Event writes.

An in-process emulator behind a trusted proxy (127.0.0.1), the default
throttle and lockout: 1,000 refused logins from 100 clients the proxy
names (wrong passwords of an account, Basic, and made-up user names,
sessions) are counted by a few security log Events, written and updated
as the simulator's request log shows, and the SecurityLog says 1,000.
"""

import base64
import concurrent.futures
import re
import statistics
import threading
import time

import bcrypt
import pytest
import requests
from tests.functional.emulator import harness

from sushy_kubevirt.accounts import recorder

PASSWORD = 'S3cret-password'
USERS = ('admin', 'flooded', 'raced')
CLIENTS, PER_CLIENT = 100, 10
SYSTEMS = '/redfish/v1/Systems'
SESSIONS = '/redfish/v1/SessionService/Sessions'
LOG = '/redfish/v1/Managers/%s/LogServices/SecurityLog/Entries'
_TIMES = re.compile(r' \((\d+) times')
_FROM = re.compile(r' times from (\d+) clients')


@pytest.fixture(scope='module')
def emulator_settings(tmp_path_factory):
    path = tmp_path_factory.mktemp('auth') / 'htpasswd'
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    path.write_text(''.join('%s:%s\n' % (user, digest) for user in USERS))
    return {'SUSHY_EMULATOR_AUTH_FILE': str(path),
            'SUSHY_EMULATOR_KUBEVIRT_TRUSTED_PROXIES': ['127.0.0.1']}


@pytest.fixture(scope='module')
def replica(sim, emulator_settings, tmp_path_factory):
    """Another emulator process on the same simulator and settings."""
    tmp = tmp_path_factory.mktemp('replica')
    config = harness.write_config(
        tmp / 'replica.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        **emulator_settings)
    process = harness.emulator_process('sushy-kubevirt-emulator', config,
                                       tmp).start()
    try:
        yield process.wait_ready(path='/redfish/v1/').url
    finally:
        process.stop()


def _basic(user, password=PASSWORD):
    raw = ('%s:%s' % (user, password)).encode()
    return {'Authorization': 'Basic ' + base64.b64encode(raw).decode()}


def _refuse(url, clients, answers):
    """Each client: half wrong passwords of 'flooded', half made-up users."""
    with requests.Session() as http:
        for client in clients:
            proxied = {'X-Forwarded-For': client}
            for index in range(PER_CLIENT):
                if index % 2:
                    answer = http.get(url + SYSTEMS, timeout=30, headers=dict(
                        proxied, **_basic('flooded', 'guess-%d' % index)))
                else:
                    answer = http.post(url + SESSIONS, timeout=30,
                                       headers=proxied, json={
                                           'UserName': 'nobody-%d' % index,
                                           'Password': 'x'})
                answers.append(answer.status_code)


def _timed_gets(url, until, durations, codes):
    with requests.Session() as http:
        for _ in range(100000):
            if until():
                return
            start = time.perf_counter()
            answer = http.get(url + SYSTEMS, headers=_basic('admin'),
                              timeout=30)
            durations.append(time.perf_counter() - start)
            codes.append(answer.status_code)


def _p99(durations):
    return statistics.quantiles(durations, n=100)[98]


def _event_writes(sim):
    return [e for e in harness.api_calls(sim, resource='events')
            if e.get('verb') in ('create', 'patch', 'update')]


def _occurrences(entries, reason):
    total = 0
    for entry in entries:
        if entry['Message'].startswith(reason + ':'):
            found = _TIMES.search(entry['Message'])
            total += int(found.group(1)) if found else 1
    return total


def _get(url, path):
    answer = requests.get(url + path, headers=_basic('admin'), timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_thousand_refused_logins_are_a_few_counted_events(sim, emulator):
    url = emulator.url
    manager = _get(url, '/redfish/v1/Managers')['Members'][0][
        '@odata.id'].rpartition('/')[2]
    quiet, codes = [], []
    _timed_gets(url, lambda: len(quiet) >= 200, quiet, codes)
    sim.request_log.clear()
    clients = ['198.51.100.%d' % i for i in range(1, CLIENTS + 1)]
    answers, busy, done = [], [], threading.Event()
    threads = [threading.Thread(target=_refuse, args=(
        url, clients[i::4], answers)) for i in range(4)]
    timer = threading.Thread(target=_timed_gets, args=(
        url, done.is_set, busy, codes))
    start = time.monotonic()
    for thread in threads + [timer]:
        thread.start()
    for thread in threads:
        thread.join(300)
    elapsed = time.monotonic() - start
    done.set()
    timer.join(60)
    assert not any(t.is_alive() for t in threads + [timer])
    assert answers == [401] * CLIENTS * PER_CLIENT, set(answers)
    assert set(codes) == {200}, set(codes)

    # Every refusal is counted, and shown, once the counts are flushed.
    def shown():
        entries = _get(url, LOG % manager)['Members']
        return _occurrences(entries, 'LoginFailed') == len(answers) and \
            entries
    entries = harness.wait_until(shown, recorder.COALESCE * 6,
                                 what='1,000 LoginFailed counted')
    writes = _event_writes(sim)
    reasons = {'LoginFailed': 2, 'AccountLockedOut': 1}   # their accounts
    bound = sum(reasons.values()) * (2 + elapsed / recorder.COALESCE)
    print('\n%d refused logins in %.1f s: %d Event writes (bound %.0f); '
          'a valid GET p99 %.1f ms quiet, %.1f ms during the flood (%d '
          'GETs)' % (len(answers), elapsed, len(writes), bound,
                     1000 * _p99(quiet), 1000 * _p99(busy), len(busy)))
    assert len(writes) <= bound, [(e['verb'], e['path']) for e in writes]
    assert _occurrences(entries, 'AccountLockedOut') >= 1
    failed = [e for e in entries if e['Message'].startswith('LoginFailed')]
    assert len(failed) <= 2 * reasons['LoginFailed'], failed
    # Both accounts' refusals came from every client (a record of each
    # window counts its own, should the flood straddle two windows).
    assert sum(int(n) for e in failed for n in _FROM.findall(
        e['Message'])) >= 2 * CLIENTS, failed
    # What could not be written is counted, never silent (a loaded
    # machine can time a write out: it is then counted, not lost).
    answer = requests.get(url + '/metrics', headers=_basic('admin'),
                          timeout=30)
    assert 'sushy_kubevirt_security_log_occurrences_total{outcome=' \
        '"unwritten"} ' in answer.text


def test_replicas_count_one_event_together(sim, emulator, replica):
    """Both processes write one Event; no occurrence is lost between them."""
    manager = _get(emulator.url, '/redfish/v1/Managers')['Members'][0][
        '@odata.id'].rpartition('/')[2]
    sim.request_log.clear()

    def refuse(index):
        url = (emulator.url, replica)[index % 2]
        return requests.get(url + SYSTEMS, timeout=30, headers=dict(
            _basic('raced', 'guess'),
            **{'X-Forwarded-For': '192.0.2.%d' % (index % 50 + 1)})
        ).status_code
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(refuse, range(400)))
    assert answers == [401] * 400, set(answers)

    def counted():
        entries = _get(emulator.url, LOG % manager)['Members']
        return _occurrences([e for e in entries if "user 'raced'" in e[
            'Message']], 'LoginFailed')
    harness.wait_until(lambda: counted() >= 400, recorder.COALESCE * 6,
                       what='both processes\' counts written')
    writes = _event_writes(sim)
    refused = [e for e in writes if e['status'] >= 400]
    print('\n400 refusals through 2 processes: %d Event writes, %d '
          'refused (%s)' % (len(writes), len(refused), sorted(
              {e['status'] for e in refused})))
    assert counted() == 400
