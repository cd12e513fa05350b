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

"""Hostile clients of the authentication and the sessions, over HTTP.

An in-process emulator (lockout on, throttle out of the way) and, where a
test needs other settings, a replica process on the same simulator: the
lockout state and the sessions are shared through Kubernetes. All
requests come from one client (127.0.0.1) unless a test says otherwise;
test_login_defences has the clients that others' failures must not hurt.
"""

import base64
import contextlib
import http.client
import json
import secrets

from kubernetes import client as kube_client
from kubernetes import config as kube_config
import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.hostile import conftest

from sushy_kubevirt.accounts import sessionstore

SESSIONS = '/redfish/v1/SessionService/Sessions'
SYSTEMS = '/redfish/v1/Systems'
PASSWORD = 'S3cret-password'
USERS = ('admin', 'other', 'victim', 'guessed', 'throttled', 'capped')
COST = 4
THRESHOLD = 3
LOCKED_FOR = 600


@pytest.fixture(scope='module')
def auth_file(tmp_path_factory):
    return conftest.htpasswd(tmp_path_factory.mktemp('auth'), USERS,
                             PASSWORD, COST)


def _lockout(auth_file, **extra):
    return dict({
        'SUSHY_EMULATOR_AUTH_FILE': auth_file,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD': THRESHOLD,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_DURATION': LOCKED_FOR,
        'SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_COUNTER_RESET_AFTER':
            LOCKED_FOR}, **extra)


@pytest.fixture(scope='module')
def emulator_settings(auth_file):
    return _lockout(auth_file,
                    SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_BURST=100000,
                    SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_RATE=100000)


@contextlib.contextmanager
def _replica(sim, tmp_path, auth_file, **extra):
    config = harness.write_config(
        tmp_path / 'replica.conf', sim.write_kubeconfig(str(tmp_path / 'kc')),
        **_lockout(auth_file, **extra))
    process = harness.emulator_process('sushy-kubevirt-emulator', config,
                                       tmp_path).start()
    try:
        process.wait_ready(path='/redfish/v1/')
        yield process.url
    finally:
        process.stop()


def _basic(user, password):
    raw = user.encode() + b':' + (password if isinstance(password, bytes)
                                  else password.encode())
    return {'Authorization': 'Basic ' + base64.b64encode(raw).decode()}


def _login(url, user, password=PASSWORD):
    return requests.post(url + SESSIONS, json={
        'UserName': user, 'Password': password}, timeout=30)


def _refused(answer, status, message_id):
    assert answer.status_code == status, answer.text
    assert conftest.message_id(answer) == message_id, answer.text
    return answer.json()['error']


@pytest.mark.parametrize('length', [73, 100, 1000])
@pytest.mark.parametrize('user', ['guessed', 'nobody'])
def test_any_password_length_is_a_401(emulator, user, length):
    password = 'x' * length
    _refused(requests.get(emulator.url + SYSTEMS, timeout=30,
                          headers=_basic(user, password)),
             401, 'NoValidSession')
    _refused(_login(emulator.url, user, password), 401, 'NoValidSession')
    # A long prefix of the right password is no way in either.
    _refused(_login(emulator.url, 'guessed', PASSWORD + 'x' * 80), 401,
             'NoValidSession')


def _nested(depth):
    return '{"UserName": ' + '[' * depth + ']' * depth + '}'


@pytest.mark.parametrize('method, path', [
    ('POST', SESSIONS),                                  # no auth needed
    ('PATCH', '/Bios/Settings'),
    ('PATCH', ''),
    ('POST', '/Actions/ComputerSystem.Reset'),
    ('PATCH', '/redfish/v1/Managers/{manager}'),         # sushy-tools' own
])
def test_nested_json_is_malformed_json(emulator, machine, method, path):
    manager = requests.get(emulator.url + '/redfish/v1/Managers', timeout=30,
                           headers=_basic('admin', PASSWORD)).json()
    uri = manager['Members'][0]['@odata.id'].rpartition('/')[2]
    if not path.startswith('/redfish'):
        path = machine.path + path
    for depth in (5000, 100000):
        answer = requests.request(
            method, emulator.url + path.format(manager=uri),
            data=_nested(depth), timeout=30,
            headers=dict(_basic('admin', PASSWORD),
                         **{'Content-Type': 'application/json'}))
        _refused(answer, 400, 'MalformedJSON')


def test_a_client_locked_out_is_refused_by_every_replica(
        sim, emulator, auth_file, tmp_path):
    url = emulator.url
    wrong = _refused(_login(url, 'victim', 'wrong'), 401, 'NoValidSession')
    for _ in range(THRESHOLD - 1):
        _refused(_login(url, 'victim', 'wrong'), 401, 'NoValidSession')
    # Locked: the right password gets the very answer a wrong one gets.
    locked = _refused(_login(url, 'victim'), 401, 'NoValidSession')
    assert locked == wrong
    _refused(requests.get(url + SYSTEMS, headers=_basic('victim', PASSWORD),
                          timeout=30), 401, 'NoValidSession')
    assert _login(url, 'admin').status_code == 201   # others are not locked
    with _replica(sim, tmp_path, auth_file) as replica:
        _refused(_login(replica, 'victim'), 401, 'NoValidSession')
        _refused(requests.get(replica + SYSTEMS, timeout=30,
                              headers=_basic('victim', PASSWORD)),
                 401, 'NoValidSession')
        assert requests.get(replica + SYSTEMS, timeout=30, headers=_basic(
            'admin', PASSWORD)).status_code == 200


def test_guessed_user_names_write_nothing(sim, emulator):
    before = len(harness.api_calls(sim, resource='secrets',
                                   method=lambda m: m != 'GET'))
    for index in range(20):
        _refused(_login(emulator.url, 'no-such-user-%d' % index, 'x'), 401,
                 'NoValidSession')
    assert len(harness.api_calls(sim, resource='secrets',
                                 method=lambda m: m != 'GET')) == before


def test_the_lockout_policy_is_published(emulator):
    root = requests.get(emulator.url + '/redfish/v1/', timeout=30).json()
    uri = root['AccountService']['@odata.id']
    _refused(requests.get(emulator.url + uri, timeout=30), 401,
             'NoValidSession')
    body = requests.get(emulator.url + uri, timeout=30,
                        headers=_basic('admin', PASSWORD)).json()
    assert body['AccountLockoutThreshold'] == THRESHOLD
    assert body['AccountLockoutDuration'] == LOCKED_FOR
    assert body['AccountLockoutCounterResetAfter'] == LOCKED_FOR
    assert requests.patch(emulator.url + uri, json={
        'AccountLockoutThreshold': 0}, timeout=30, headers=_basic(
            'admin', PASSWORD)).status_code == 405


def _get_from(url, source, headers):
    """GET ``url`` from the local address ``source``: another client."""
    host, _, port = url.partition('://')[2].partition(':')
    conn = http.client.HTTPConnection(host, int(port), timeout=30,
                                      source_address=(source, 0))
    try:
        conn.request('GET', SYSTEMS, headers=headers)
        answer = conn.getresponse()
        return answer.status, dict(answer.getheaders())
    finally:
        conn.close()


def test_failed_checks_are_throttled_not_clients(sim, auth_file, tmp_path):
    burst = 5
    with _replica(sim, tmp_path, auth_file,
                  SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_BURST=burst,
                  SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_RATE=0.5,
                  SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD=0
                  ) as url:
        known = _basic('admin', PASSWORD)
        assert requests.get(url + SYSTEMS, timeout=30, headers=known
                            ).status_code == 200
        codes = [requests.get(url + SYSTEMS, timeout=30, headers=_basic(
            'throttled', 'guess-%d' % i)).status_code for i in range(20)]
        assert codes == [401] * burst + [429] * (20 - burst), codes
        # Credentials not known good wait for the client's budget for
        # the account, the right password too: no check is made.
        answer = requests.get(url + SYSTEMS, timeout=30,
                              headers=_basic('throttled', PASSWORD))
        _refused(answer, 429, 'ServiceTemporarilyUnavailable')
        assert 1 <= int(answer.headers['Retry-After']) <= 2
        _refused(_login(url, 'throttled'), 429,
                 'ServiceTemporarilyUnavailable')
        # Known-good credentials and other accounts are not held back,
        # nor is another client.
        assert requests.get(url + SYSTEMS, timeout=30, headers=known
                            ).status_code == 200
        assert _login(url, 'admin').status_code == 201
        assert requests.get(url + SYSTEMS, timeout=30, headers=_basic(
            'other', PASSWORD)).status_code == 200
        assert _get_from(url, '127.0.0.2', _basic('throttled', PASSWORD)
                         )[0] == 200
        harness.wait_until(lambda: requests.get(
            url + SYSTEMS, timeout=30, headers=_basic(
                'throttled', PASSWORD)).status_code == 200, 20, 0.5,
            'the throttle lets the client in again')


def _random_token():
    return '%s.%s.%s' % (secrets.token_hex(8), secrets.token_urlsafe(32),
                         secrets.token_urlsafe(18))


def test_invalid_tokens_cost_no_api_call(sim, emulator):
    answer = _login(emulator.url, 'admin')
    token, location = answer.headers['X-Auth-Token'], \
        answer.headers['Location']
    before = len(harness.api_calls(sim, resource='secrets'))
    for _ in range(50):
        _refused(requests.get(emulator.url + SYSTEMS, timeout=30, headers={
            'X-Auth-Token': _random_token()}), 401, 'NoValidSession')
    assert len(harness.api_calls(sim, resource='secrets')) == before
    assert requests.delete(emulator.url + location, timeout=30, headers={
        'X-Auth-Token': token}).status_code == 204
    before = len(harness.api_calls(sim, resource='secrets'))
    for _ in range(10):
        _refused(requests.get(emulator.url + SYSTEMS, timeout=30, headers={
            'X-Auth-Token': token}), 401, 'NoValidSession')
    assert len(harness.api_calls(sim, resource='secrets')) == before


def _core(sim, tmp_path):
    """A client of a cluster administrator, not of the emulator."""
    return kube_client.CoreV1Api(kube_config.new_client_from_config(
        config_file=backend.write_admin_kubeconfig(
            sim, str(tmp_path / 'admin-kc'))))


def _session_secrets(core):
    return core.list_namespaced_secret(
        'default', label_selector=sessionstore.LABEL + '=true').items


def test_the_session_limit_is_refused_without_listing_all(
        sim, auth_file, tmp_path):
    core = _core(sim, tmp_path)
    live = len(_session_secrets(core))
    with _replica(sim, tmp_path, auth_file,
                  SUSHY_EMULATOR_KUBEVIRT_SESSION_LIMIT=live + 2) as url:
        tokens = [_login(url, 'capped').headers['X-Auth-Token']
                  for _ in range(2)]
        start = len(harness.api_calls(sim))
        _refused(_login(url, 'capped'), 503, 'SessionLimitExceeded')
        lists = [c for c in harness.api_calls(sim)[start:]
                 if c['verb'] == 'list' and c['resource'] == 'secrets']
        assert lists and all(c['query'].get('limit') for c in lists), lists
        mine = requests.get(url + SESSIONS, timeout=30, headers={
            'X-Auth-Token': tokens[0]}).json()['Members']
        assert requests.delete(url + mine[0]['@odata.id'], timeout=30,
                               headers={'X-Auth-Token': tokens[0]}
                               ).status_code == 204
        assert _login(url, 'capped').status_code == 201


def test_bad_session_secrets_are_no_sessions(sim, emulator, tmp_path):
    core = _core(sim, tmp_path)
    answer = _login(emulator.url, 'admin')
    token, sid = answer.headers['X-Auth-Token'], answer.json()['Id']
    name = sessionstore.PREFIX + sid
    secret = core.read_namespaced_secret(name, 'default')
    secret.metadata.annotations[sessionstore.CREATED] = '9' * 300
    core.replace_namespaced_secret(name, 'default', secret)
    core.create_namespaced_secret('default', kube_client.V1Secret(
        metadata=kube_client.V1ObjectMeta(
            name=sessionstore.PREFIX + 'foreign', labels={
                sessionstore.LABEL: 'true'},
            annotations={sessionstore.USER: 'admin'})))
    other = _login(emulator.url, 'admin').headers['X-Auth-Token']
    listed = requests.get(emulator.url + SESSIONS, timeout=30, headers={
        'X-Auth-Token': other}).json()['Members']
    assert listed and not [m for m in listed if m['@odata.id'].endswith(
        (sid, 'foreign'))]
    for uri in listed:
        assert requests.get(emulator.url + uri['@odata.id'], timeout=30,
                            headers={'X-Auth-Token': other}
                            ).status_code == 200
    _refused(requests.get(emulator.url + SESSIONS + '/' + sid, timeout=30,
                          headers={'X-Auth-Token': other}),
             404, 'ResourceNotFound')
    _refused(requests.get(emulator.url + SYSTEMS, timeout=30, headers={
        'X-Auth-Token': token}), 401, 'NoValidSession')


def test_a_user_sees_and_ends_only_their_sessions(emulator):
    url = emulator.url
    mine = _login(url, 'admin')
    theirs = _login(url, 'other')
    me = {'X-Auth-Token': mine.headers['X-Auth-Token']}
    them = {'X-Auth-Token': theirs.headers['X-Auth-Token']}
    listed = requests.get(url + SESSIONS, headers=me, timeout=30).json()
    uris = [m['@odata.id'] for m in listed['Members']]
    assert mine.headers['Location'] in uris
    assert theirs.headers['Location'] not in uris
    for member in uris:
        assert requests.get(url + member, headers=me, timeout=30
                            ).json()['UserName'] == 'admin'
    location = theirs.headers['Location']
    _refused(requests.get(url + location, headers=me, timeout=30), 404,
             'ResourceNotFound')
    _refused(requests.delete(url + location, headers=me, timeout=30), 404,
             'ResourceNotFound')
    _refused(requests.delete(url + location, timeout=30,
                             headers=_basic('admin', PASSWORD)), 404,
             'ResourceNotFound')
    assert requests.get(url + SYSTEMS, headers=them, timeout=30
                        ).status_code == 200
    assert requests.get(url + location, headers=them, timeout=30
                        ).json()['UserName'] == 'other'
    assert requests.delete(url + location, headers=them, timeout=30
                           ).status_code == 204


def test_an_unparsable_body_changes_nothing(emulator):
    for data in (b'{"UserName": "guessed", "Password": "\\ud800"}',
                 json.dumps({'UserName': 'guessed', 'Password': 'x' * 10 ** 5}
                            ).encode()):
        _refused(requests.post(emulator.url + SESSIONS, data=data,
                               timeout=30, headers={
                                   'Content-Type': 'application/json'}),
                 401, 'NoValidSession')
