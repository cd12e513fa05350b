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


"""Failed logins hurt no one else: the throttle and the lockout, over HTTP.

An in-process emulator with the default burst of the throttle (a
client's budget of failed checks per account; refilled slowly, so that a
slow machine sees the same answers) and a long lockout; other clients
are other loopback source addresses, or the clients a trusted proxy
names.
"""

import base64
import contextlib
import http.client
import json
import secrets
import threading
import time

import pytest
from tests.functional.emulator import harness
from tests.functional.hostile import conftest

SESSIONS = '/redfish/v1/SessionService/Sessions'
SYSTEMS = '/redfish/v1/Systems'
PASSWORD = 'S3cret-password'
USERS = ('admin', 'other', 'valid', 'flooded', 'owner', 'spoofed')
COST = 4
THRESHOLD = 3
ALL_CLIENTS = 6
LOCKED_FOR = 600
#: The throttle: failed checks at once (the default), then per second.
BURST, RATE = 10, 0.05


@pytest.fixture(scope='module')
def auth_file(tmp_path_factory):
    return conftest.htpasswd(tmp_path_factory.mktemp('auth'), USERS,
                             PASSWORD, COST)


def _settings(auth_file, **extra):
    return dict({
        'SUSHY_EMULATOR_AUTH_FILE': auth_file,
        'SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_RATE': RATE,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD': THRESHOLD,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_ALL_CLIENTS_THRESHOLD':
            ALL_CLIENTS,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_DURATION': LOCKED_FOR,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_COUNTER_RESET_AFTER':
            LOCKED_FOR}, **extra)


@pytest.fixture(scope='module')
def emulator_settings(auth_file):
    return _settings(auth_file)


@contextlib.contextmanager
def _replica(sim, tmp_path, auth_file, **extra):
    config = harness.write_config(
        tmp_path / 'replica.conf', sim.write_kubeconfig(str(tmp_path / 'kc')),
        **_settings(auth_file, **extra))
    process = harness.emulator_process('sushy-kubevirt-emulator', config,
                                       tmp_path).start()
    try:
        process.wait_ready(path='/redfish/v1/')
        yield process.url
    finally:
        process.stop()


def _basic(user, password=PASSWORD):
    raw = ('%s:%s' % (user, password)).encode()
    return {'Authorization': 'Basic ' + base64.b64encode(raw).decode()}


class Answer:
    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.text = status, headers, body

    def json(self):
        return json.loads(self.text)


def _call(url, method, path, source='127.0.0.1', headers=None, body=None):
    """One request from the loopback address ``source``: a client."""
    host, _, port = url.partition('://')[2].partition(':')
    conn = http.client.HTTPConnection(host, int(port), timeout=30,
                                      source_address=(source, 0))
    headers = dict(headers or {})
    if body is not None:
        body = json.dumps(body)
        headers['Content-Type'] = 'application/json'
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return Answer(answer.status, dict(answer.getheaders()),
                      answer.read().decode())
    finally:
        conn.close()


def _get(url, headers, source='127.0.0.1'):
    return _call(url, 'GET', SYSTEMS, source, headers).status_code


def _login(url, user, password=PASSWORD, source='127.0.0.1'):
    return _call(url, 'POST', SESSIONS, source,
                 body={'UserName': user, 'Password': password})


def test_others_failures_refuse_no_right_password(emulator):
    url = emulator.url
    wrong = [_get(url, _basic('other', 'wrong-%d' % i)) for i in range(15)]
    assert wrong == [401] * BURST + [429] * 5, wrong
    assert [_get(url, _basic('admin')) for _ in range(10)] == [200] * 10


def _flood(url, deadline, counts):
    """Wrong passwords, unknown users and made-up tokens, until then."""
    for index in range(100000):
        if time.monotonic() > deadline:
            return
        kind = index % 3
        if kind == 0:
            answer = _get(url, _basic('flooded', 'guess-%d' % index))
        elif kind == 1:
            answer = _login(url, 'nobody-%d' % index, 'x').status_code
        else:
            answer = _get(url, {'X-Auth-Token': secrets.token_hex(20)})
        counts.append((kind, answer))


def _valid_client(url, deadline, refused, served):
    """Log in, GET, log out; GET with Basic; until then."""
    while time.monotonic() < deadline:
        login = _login(url, 'valid')
        answers = [login]
        if login.status_code == 201:
            token = {'X-Auth-Token': login.headers['X-Auth-Token']}
            answers.append(_call(url, 'GET', SYSTEMS, headers=token))
            answers.append(_call(url, 'DELETE', login.headers['Location'],
                                 headers=token))
        answers.append(_call(url, 'GET', SYSTEMS, headers=_basic('valid')))
        for answer in answers:
            (served if answer.status_code < 300 else refused).append(
                answer.status_code)


def test_a_flood_from_the_same_address_refuses_no_valid_client(emulator):
    url, seconds = emulator.url, 4.0
    flood, refused, served = [], [], []
    start = time.monotonic()
    threads = [threading.Thread(target=_flood,
                                args=(url, start + seconds, flood))
               for _ in range(4)]
    threads.append(threading.Thread(target=_valid_client, args=(
        url, start + seconds, refused, served)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    elapsed = time.monotonic() - start
    assert not any(thread.is_alive() for thread in threads)
    assert refused == [] and len(served) > 10, (refused, len(served))
    throttled = [answer for kind, answer in flood if answer == 429]
    checked = [kind for kind, answer in flood if kind < 2 and answer == 401]
    assert throttled, 'the flood was never throttled'
    # Two budgets were spent: 'flooded' and user names that are no
    # account (made-up tokens cost no check and take nothing).
    assert len(checked) <= 2 * (BURST + RATE * elapsed), len(checked)
    assert {answer for kind, answer in flood if kind == 2} == {401}


def test_a_trusted_proxy_names_the_clients(sim, emulator, auth_file,
                                           tmp_path):
    def forwarded(client, password):
        return dict(_basic('spoofed', password),
                    **{'X-Forwarded-For': '203.0.113.7, ' + client})

    # Without trusted proxies the header is ignored: a made-up client
    # does not escape the budget of its address.
    codes = [_get(emulator.url, forwarded('198.51.100.%d' % i, 'x'))
             for i in range(BURST + 2)]
    assert codes == [401] * BURST + [429] * 2, codes
    with _replica(sim, tmp_path, auth_file,
                  SUSHY_EMULATOR_KUBEVIRT_TRUSTED_PROXIES=['127.0.0.1'],
                  SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD=0
                  ) as url:
        codes = [_get(url, forwarded('198.51.100.1', 'x'))
                 for _ in range(BURST + 2)]
        assert codes == [401] * BURST + [429] * 2, codes
        answer = _call(url, 'GET', SYSTEMS,
                       headers=forwarded('198.51.100.1', 'y'))
        assert conftest.message_id(answer) == 'ServiceTemporarilyUnavailable'
        assert 1 <= int(answer.headers['Retry-After']) <= 1 / RATE
        # Another client behind the proxy has a budget of its own.
        assert _get(url, forwarded('198.51.100.2', 'x')) == 401
        assert _get(url, forwarded('198.51.100.3', PASSWORD)) == 200
        # The header of a peer that is no trusted proxy is ignored.
        assert [_get(url, forwarded('198.51.100.4', 'x'), '127.0.0.2')
                for _ in range(BURST + 1)] == [401] * BURST + [429]


def test_a_stranger_does_not_lock_the_owner_out(sim, emulator, auth_file,
                                                tmp_path):
    url = emulator.url
    assert _login(url, 'owner').status_code == 201     # the owner's client
    for _ in range(THRESHOLD):
        assert _login(url, 'owner', 'guess', '127.0.0.2').status_code == 401
    # The stranger is locked out, even with the right password...
    assert _login(url, 'owner', source='127.0.0.2').status_code == 401
    assert _get(url, _basic('owner'), '127.0.0.2') == 401
    # ... the owner is not.
    assert _login(url, 'owner').status_code == 201
    assert _get(url, _basic('owner')) == 200
    for _ in range(ALL_CLIENTS - THRESHOLD):
        assert _login(url, 'owner', 'guess', '127.0.0.3').status_code == 401
    # The account's failures from all clients reached their bound: a
    # client that never logged in as it has no more guesses, the right
    # password included; the owner still gets in, on every replica.
    assert _login(url, 'owner', source='127.0.0.4').status_code == 401
    assert _get(url, _basic('owner'), '127.0.0.4') == 401
    assert _get(url, _basic('owner')) == 200
    with _replica(sim, tmp_path, auth_file) as replica:
        assert _get(replica, _basic('owner'), '127.0.0.4') == 401
        assert _login(replica, 'owner', source='127.0.0.5'
                      ).status_code == 401
        assert _login(replica, 'owner').status_code == 201
        assert _get(replica, _basic('owner')) == 200
