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

"""A writable SessionService.SessionTimeout, agreed by every process.

gunicorn 2 workers (replica A) and an in-process emulator (replica B)
serve one cluster; the configured timeout is 2 s. An Administrator sets
it as Ansible's community.general ``SetSessionService`` does (a GET for
the ETag, then a PATCH with If-Match and Basic credentials); every worker
and replica applies it, to the sessions already open too.
"""

import base64
import collections
import json
import time

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.conformance import conftest
from tests.functional.emulator import harness

from sushy_kubevirt.accounts import lockout
from sushy_kubevirt.accounts import sessiontimeout

ADMIN, OPERATOR, PASSWORD = 'admin', 'operator', 'S3cret-password'
SERVICE = '/redfish/v1/SessionService'
SYSTEMS = '/redfish/v1/Systems'
#: Ansible's redfish_utils PATCH_HEADERS.
PATCH_HEADERS = {'content-type': 'application/json',
                 'accept': 'application/json', 'OData-Version': '4.0'}

sim = conftest.sim_fixture(1)


@pytest.fixture(scope='module')
def config(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('timeout')
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(6)).decode()
    (tmp / 'htpasswd').write_text('%s:%s\n%s:%s\n' % (ADMIN, digest,
                                                      OPERATOR, digest))
    (tmp / 'accounts.yaml').write_text(
        'accounts:\n  %s: {role: Administrator}\n  %s: {role: Operator}\n'
        % (ADMIN, OPERATOR))
    return harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(tmp / 'htpasswd'),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE=str(tmp / 'accounts.yaml'),
        SUSHY_EMULATOR_KUBEVIRT_SESSION_TIMEOUT=2)


@pytest.fixture(scope='module')
def gunicorn(config, tmp_path_factory):
    process = harness.emulator_process(
        'gunicorn', config, tmp_path_factory.mktemp('gunicorn'))
    process.start()
    try:
        process.wait_ready(path='/redfish/v1/')
        yield process
    finally:
        process.stop()


@pytest.fixture(scope='module')
def replica(config):
    with harness.InProcess(config) as server:
        yield server


def _basic(user=ADMIN):
    return 'Basic ' + base64.b64encode(
        ('%s:%s' % (user, PASSWORD)).encode()).decode()


def _get(url, path=SERVICE, **headers):
    # A new connection each time: gunicorn hands it to either worker.
    return requests.get(url + path, headers=dict(
        {'Authorization': _basic()}, Connection='close', **headers),
        timeout=30)


def _ansible_set(url, config_, user=ADMIN):
    """community.general's SetSessionService: GET, then PATCH If-Match."""
    current = _get(url, Authorization=_basic(user))
    headers = dict(PATCH_HEADERS, Authorization=_basic(user))
    etag = current.headers.get('etag') or current.json().get('@odata.etag')
    if etag:
        headers['If-Match'] = etag
    return requests.patch(url + SERVICE, data=json.dumps(config_),
                          headers=headers, timeout=30)


def _timeouts(url, count=8):
    return {_get(url).json()['SessionTimeout'] for _ in range(count)}


def _error(response, status, message_id):
    assert response.status_code == status, response.text
    info = response.json()['error']['@Message.ExtendedInfo'][0]
    assert info['MessageId'].endswith('.' + message_id), info
    return info


def test_every_process_applies_the_new_timeout_to_open_sessions(
        gunicorn, replica):
    assert _timeouts(gunicorn.url) == _timeouts(replica.url) == {2}
    login = requests.post(gunicorn.url + SERVICE + '/Sessions', json={
        'UserName': OPERATOR, 'Password': PASSWORD}, timeout=30)
    token = login.headers['X-Auth-Token']

    response = _ansible_set(replica.url, {'SessionTimeout': 30})
    assert response.status_code == 200, response.text
    assert response.json()['SessionTimeout'] == 30
    assert response.headers['ETag'] == _get(replica.url).headers['ETag']

    harness.wait_until(lambda: _timeouts(gunicorn.url) == {30}, 20,
                       what='every worker at 30 s')
    assert _timeouts(replica.url) == {30}
    # Idle longer than the 2 s the session was opened under: it stays.
    time.sleep(4)
    for url in (gunicorn.url, replica.url) * 2:
        assert requests.get(url + SYSTEMS, headers={
            'X-Auth-Token': token, 'Connection': 'close'},
            timeout=30).status_code == 200


@pytest.mark.parametrize('body, status, message_id', [
    ({'SessionTimeout': 29}, 400, 'PropertyValueOutOfRange'),
    ({'SessionTimeout': 86401}, 400, 'PropertyValueOutOfRange'),
    ({'SessionTimeout': '600'}, 400, 'PropertyValueTypeError'),
    ({'SessionTimeout': True}, 400, 'PropertyValueTypeError'),
    ({'SessionTimeout': 60.5}, 400, 'PropertyValueTypeError'),
    ({'SessionTimeout': 600, 'ServiceEnabled': False}, 400,
     'PropertyNotWritable'),
    ({'SessionTimeout': 600, 'Id': 'x'}, 400, 'PropertyNotWritable'),
    ({'SessionTimeout': 600, 'Nonsense': 1}, 400, 'PropertyUnknown'),
    ({}, 400, 'NoOperation'),
])
def test_bad_patches_change_nothing(replica, body, status, message_id):
    before = _get(replica.url)
    response = requests.patch(replica.url + SERVICE, json=body, headers={
        'Authorization': _basic()}, timeout=30)
    _error(response, status, message_id)
    after = _get(replica.url)
    assert after.json() == before.json()
    assert after.headers['ETag'] == before.headers['ETag']


def test_only_configure_manager_may_set_it(replica):
    before = _get(replica.url).json()
    _error(_ansible_set(replica.url, {'SessionTimeout': 900}, OPERATOR),
           403, 'InsufficientPrivilege')
    assert _get(replica.url).json() == before


def test_a_stale_if_match_is_a_412(replica):
    stale = _get(replica.url).headers['ETag']
    assert _ansible_set(replica.url, {'SessionTimeout': 45}
                        ).status_code == 200
    response = requests.patch(replica.url + SERVICE, json={
        'SessionTimeout': 60}, headers={'Authorization': _basic(),
                                        'If-Match': stale}, timeout=30)
    _error(response, 412, 'PreconditionFailed')
    assert _get(replica.url).json()['SessionTimeout'] == 45


def _calls(sim, action):
    """The API calls of ``action`` (one Basic-auth request).

    But for its read of the lockout state: Basic auth reads that Secret
    at most once a second per process (the configuration guide), so one
    falls in ``action`` whenever a second passed since the last (on a
    loaded machine, between two requests of a test). At most one is
    allowed; the count is the SessionService's own calls.
    """
    backend.log_complete(sim)
    sim.request_log.clear()
    action()
    backend.log_complete(sim)
    calls = [e for e in harness.api_calls(sim) if e.get('path') != '/version']
    lockout_reads = [e for e in calls if e.get('name') == lockout.NAME]
    assert [e['verb'] for e in lockout_reads] in ([], ['get']), calls
    return collections.Counter(
        '%s %s' % (e['verb'], e['resource'])
        for e in calls if e not in lockout_reads)


def test_api_calls(sim, replica):
    # Warm, and the Secret made (the first PATCH creates it).
    assert _ansible_set(replica.url, {'SessionTimeout': 900}
                        ).status_code == 200
    assert _calls(sim, lambda: _get(replica.url)) == {}
    assert _calls(sim, lambda: requests.patch(
        replica.url + SERVICE, json={'SessionTimeout': 1800},
        headers={'Authorization': _basic()}, timeout=30)) == {
        'patch secrets': 1}
    secret = sim.store.get(sim.store.resource('', 'secrets'), 'default',
                           sessiontimeout.SERVICE_NAME)
    assert secret['metadata']['annotations'][sessiontimeout.TIMEOUT] == '1800'
