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

"""SessionService and authentication over HTTP, with real clients.

gunicorn 2 workers x 2 threads (replica A) and an in-process emulator
(replica B) serve one simulator with the same htpasswd file: a token of
one replica works on the other, a logout on one is seen by the other.
redfishtool logs in with ``-A Session``, lists and resets Systems.
"""

import base64
import http.client
import json
import os
import statistics
import subprocess
import time

import bcrypt
import pytest
import requests
from tests import backend as tests_backend
from tests.functional.conformance import conftest
from tests.functional.emulator import harness

from sushy_kubevirt.accounts import lockout
from sushy_kubevirt.accounts import sessionstore

USER, PASSWORD = 'admin', 'S3cret-password'
SESSIONS = '/redfish/v1/SessionService/Sessions'
SYSTEMS = '/redfish/v1/Systems'
#: bcrypt cost of the test users (fast, still far above a dict lookup).
COST = 8
#: Seconds the lockout Secret's requests take in the timing test.
SLOW_LOCKOUT = 1.0


sim = conftest.sim_fixture(2)


@pytest.fixture(scope='module')
def auth_file(tmp_path_factory):
    path = tmp_path_factory.mktemp('auth') / 'htpasswd'
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(COST))
    path.write_text('%s:%s\nother:%s\n' % (
        USER, digest.decode(), bcrypt.hashpw(b'x', bcrypt.gensalt(
            COST)).decode()))
    return str(path)


def _config(sim, tmp, auth_file, **extra):
    return harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=auth_file, **extra)


@pytest.fixture(scope='module')
def gunicorn(sim, auth_file, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('gunicorn')
    process = harness.emulator_process(
        'gunicorn', _config(sim, tmp, auth_file), tmp)
    process.start()
    try:
        process.wait_ready(path='/redfish/v1/')
        yield process
    finally:
        process.stop()


@pytest.fixture(scope='module')
def replica(sim, auth_file, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('replica')
    with harness.InProcess(_config(sim, tmp, auth_file)) as server:
        yield server


def login(url, user=USER, password=PASSWORD):
    return requests.post(url + SESSIONS, json={
        'UserName': user, 'Password': password}, timeout=30)


def _get(url, path, **headers):
    # A new connection each time: gunicorn hands it to either worker.
    return requests.get(url + path, headers=dict(
        headers, Connection='close'), timeout=30)


def _session_secrets(sim):
    rt = sim.store.resource('', 'secrets')
    return [s for s in sim.store.list(rt, 'default')[0]
            if s['metadata'].get('labels', {}).get(sessionstore.LABEL)]


def _redfish_error(response, status, message_id):
    assert response.status_code == status, response.text
    body = response.json()
    assert body['error']['code'].endswith('.' + message_id), body
    assert body['error']['@Message.ExtendedInfo'][0]['MessageId'] == \
        body['error']['code']


def test_login_works_on_every_worker_and_replica(sim, gunicorn, replica):
    response = login(gunicorn.url)
    assert response.status_code == 201, response.text
    token = response.headers['X-Auth-Token']
    location = response.headers['Location']
    assert location.startswith(SESSIONS + '/')
    assert response.json()['UserName'] == USER
    for url in (gunicorn.url, replica.url) * 8:
        assert _get(url, SYSTEMS, **{'X-Auth-Token': token}).status_code \
            == 200
    members = _get(replica.url, SESSIONS, **{'X-Auth-Token': token}).json()
    assert {'@odata.id': location} in members['Members']
    # Nothing of the token is stored: only its digest.
    assert token not in json.dumps(_session_secrets(sim))

    # Logout on the replica: refused there at once, by every gunicorn
    # worker once its watch delivered the deletion.
    assert requests.delete(replica.url + location, headers={
        'X-Auth-Token': token}, timeout=30).status_code == 204
    _redfish_error(_get(replica.url, SYSTEMS, **{'X-Auth-Token': token}),
                   401, 'NoValidSession')
    for url in (gunicorn.url, replica.url) * 8:
        _redfish_error(_refused(url, SYSTEMS, **{'X-Auth-Token': token}),
                       401, 'NoValidSession')
    assert _refused(gunicorn.url, location, Authorization=_basic()
                    ).status_code == 404


def _refused(url, path, **headers):
    """The first answer of ``path`` that is no 200 (a logout's bound)."""
    answers = []
    harness.wait_until(
        lambda: answers.append(_get(url, path, **headers)) or
        answers[-1].status_code != 200, conftest.LOGOUT_BOUND, 0.01,
        'the logout seen by every worker')
    return answers[-1]


def _basic(user=USER, password=PASSWORD):
    return 'Basic ' + base64.b64encode(
        ('%s:%s' % (user, password)).encode()).decode()


def test_login_needs_no_authentication_and_checks_the_body(gunicorn):
    assert _get(gunicorn.url, '/redfish/v1/').status_code == 200
    _redfish_error(_get(gunicorn.url, '/redfish/v1/SessionService'), 401,
                   'NoValidSession')
    service = _get(gunicorn.url, '/redfish/v1/SessionService',
                   Authorization=_basic())
    assert service.status_code == 200
    assert service.json()['Sessions'] == {'@odata.id': SESSIONS}
    root = _get(gunicorn.url, '/redfish/v1/').json()
    assert root['Links']['Sessions'] == {'@odata.id': SESSIONS}
    _redfish_error(_get(gunicorn.url, SESSIONS), 401, 'NoValidSession')
    _redfish_error(login(gunicorn.url, password='wrong'), 401,
                   'NoValidSession')
    _redfish_error(login(gunicorn.url, user='nobody'), 401, 'NoValidSession')
    response = requests.post(gunicorn.url + SESSIONS, json={
        'UserName': USER}, timeout=30)
    _redfish_error(response, 400, 'PropertyMissing')
    response = requests.post(gunicorn.url + SESSIONS, json={
        'UserName': USER, 'Password': 5}, timeout=30)
    _redfish_error(response, 400, 'PropertyValueTypeError')


@pytest.mark.parametrize('header', [
    'Basic !!!not-base64', 'Bearer x', 'Basic ' + base64.b64encode(
        b'no-colon').decode(), 'Basic', 'Digest a=b', _basic(USER, 'wrong'),
    _basic('nobody', 'x')])
def test_bad_credentials_are_a_redfish_401(gunicorn, header):
    response = _get(gunicorn.url, SYSTEMS, Authorization=header)
    _redfish_error(response, 401, 'NoValidSession')
    assert response.headers['WWW-Authenticate'].startswith('Basic')


def test_basic_auth_keeps_working(gunicorn):
    assert _get(gunicorn.url, SYSTEMS, Authorization=_basic()
                ).status_code == 200


def _refusal_seconds(url, header, client):
    """A refused GET from loopback address ``client``, connection included.

    Each from a client of its own: the throttle and the lockout (on, as
    by default) count per client.
    """
    host, _, port = url.partition('://')[2].partition(':')
    conn = http.client.HTTPConnection(host, int(port), timeout=30,
                                      source_address=(client, 0))
    try:
        start = time.perf_counter()
        conn.request('GET', SYSTEMS, headers={'Authorization': header})
        status = conn.getresponse().status
        seconds = time.perf_counter() - start
    finally:
        conn.close()
    assert status == 401
    return seconds


def test_unknown_user_and_wrong_password_take_as_long(
        sim, replica, record_property):
    """Each costs one bcrypt check: the time does not tell the user.

    In pairs back to back, so both see the same machine load; a cost-8 bcrypt
    takes ~15 ms, a refusal without one ~1 ms. The API server answers
    the writes of the lockout Secret after :data:`SLOW_LOCKOUT` s (the
    simulator's): a wrong password's count, written on the answer's path,
    would make its refusal ~10 times slower than an unknown user's; it is
    written after the answer. Its reads (at most once a second, by either
    kind) are not slowed: a few slow samples of one kind would sway a
    median of 21 on a loaded machine.
    """
    rules = [] if tests_backend.REAL else [
        sim.faults.latency(SLOW_LOCKOUT, method=method,
                           path='/secrets(/%s)?$' % lockout.NAME)
        for method in ('POST', 'PATCH')]
    try:
        unknown, wrong = _basic('nobody', 'x'), _basic('other', 'wrong')
        _refusal_seconds(replica.url, unknown, '127.0.3.1')   # warm-up
        pairs = []
        for index in range(21):     # in turn first: the order cancels
            pair = {}
            for kind, header in sorted(enumerate((unknown, wrong)),
                                       reverse=index % 2 == 1):
                pair[kind] = _refusal_seconds(
                    replica.url, header,
                    '127.0.%d.%d' % (kind + 1, index + 1))
            pairs.append((pair[0], pair[1]))
    finally:
        for rule in rules:
            sim.faults.remove(rule)
    # Each pair back to back, under the same load: a write on the path
    # adds SLOW_LOCKOUT to every wrong password whatever the load.
    gap = statistics.median(w - u for u, w in pairs)
    ratio = statistics.median(u / w for u, w in pairs)
    record_property('ratio', round(ratio, 3))
    record_property('gap_s', round(gap, 3))
    assert abs(gap) < SLOW_LOCKOUT / 2 and 0.5 < ratio < 2, pairs


@pytest.mark.parametrize('where', ['gunicorn', 'replica'])
def test_no_token_or_password_in_the_log(request, caplog, where):
    """Neither gunicorn's log nor any record logged in-process (DEBUG)."""
    url = request.getfixturevalue(where).url
    token = login(url).headers['X-Auth-Token']
    _get(url, SYSTEMS, **{'X-Auth-Token': token})
    _get(url, SYSTEMS, **{'X-Auth-Token': token + 'x'})
    login(url, password=PASSWORD + 'x')
    _get(url, SYSTEMS, Authorization=_basic(USER, PASSWORD + 'y'))
    if where == 'gunicorn':
        log = request.getfixturevalue('gunicorn').log()
    else:
        log = caplog.text
        assert 'Session' in log and USER in log   # it logged the events
    for secret in (token, token.partition('.')[2], PASSWORD,
                   _basic(USER, PASSWORD + 'y').split()[1]):
        assert secret not in log


def test_session_timeout_is_an_inactivity_timeout(sim, auth_file, tmp_path):
    config = _config(sim, tmp_path, auth_file,
                     SUSHY_EMULATOR_KUBEVIRT_SESSION_TIMEOUT=2)
    with harness.InProcess(config) as server:
        service = _get(server.url, '/redfish/v1/SessionService',
                       Authorization=_basic()).json()
        assert service['SessionTimeout'] == 2
        response = login(server.url)
        token = response.headers['X-Auth-Token']
        name = sessionstore.PREFIX + response.json()['Id']
        # In use every 0.5 s for 4 s: it stays.
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            assert _get(server.url, SYSTEMS, **{'X-Auth-Token': token}
                        ).status_code == 200
            time.sleep(0.5)
        time.sleep(3)   # idle longer than the timeout
        _redfish_error(_get(server.url, SYSTEMS, **{'X-Auth-Token': token}),
                       401, 'NoValidSession')
        assert name not in [s['metadata']['name']
                            for s in _session_secrets(sim)]


def _redfishtool(url, *args):
    argv = [os.path.join(harness.BIN, 'redfishtool'), '-r',
            url.partition('://')[2], '-S', 'Never', '-A', 'Session',
            '-u', USER, '-p', PASSWORD, '-T', '30'] + list(args)
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _session_names(sim):
    return {s['metadata']['name'] for s in _session_secrets(sim)}


def test_redfishtool_session_lists_and_resets_systems(sim, gunicorn):
    before = _session_names(sim)
    listed = _redfishtool(gunicorn.url, 'Systems', 'list')
    ids = [m['@odata.id'].rpartition('/')[2] for m in requests.get(
        gunicorn.url + SYSTEMS, headers={'Authorization': _basic()},
        timeout=30).json()['Members']]
    assert ids and all(i in listed for i in ids), listed
    _redfishtool(gunicorn.url, 'Systems', '-I', ids[0], 'reset', 'On')
    harness.wait_until(lambda: requests.get(
        gunicorn.url + SYSTEMS + '/' + ids[0], timeout=30, headers={
            'Authorization': _basic()}).json()['PowerState'] == 'On',
        what='System On after redfishtool reset')
    # redfishtool logged in each time and logged out: none is left.
    assert _session_names(sim) == before
