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

"""Accounts kept as Secrets, created, changed and deleted over Redfish.

One emulator in this process and one in a subprocess share the cluster:
what one changes, the other applies within a bounded wait.
"""

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.tenancy import conftest

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import secretaccounts

NAMESPACE = 'default'
ACCOUNTS = '/redfish/v1/AccountService/Accounts'
SESSIONS = '/redfish/v1/SessionService/Sessions'
SYSTEMS = '/redfish/v1/Systems'
ADMIN_PASSWORD = 'Admin-password-1'
#: Seconds another process may take to apply a change (its watch).
AGREE = 20.0


def _bootstrap(sim):
    """The first Administrator, made as an operator would (kubectl)."""
    digest = bcrypt.hashpw(ADMIN_PASSWORD.encode(), bcrypt.gensalt(4))
    status, body = backend.admin_request(
        sim, 'POST', '/api/v1/namespaces/%s/secrets' % NAMESPACE, {
            'apiVersion': 'v1', 'kind': 'Secret',
            'metadata': {'name': secretaccounts.PREFIX + 'admin',
                         'labels': {secretaccounts.LABEL: 'true'}},
            'data': secretaccounts.data(
                accountsfile.Account('admin', 'Administrator'),
                digest.decode())})
    assert status == 201, body


@pytest.fixture(scope='module')
def config(sim, tmp_path_factory):
    _bootstrap(sim)
    tmp = tmp_path_factory.mktemp('secrets')
    return harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE='secrets',
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD=0,
        SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_BURST=100000,
        SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_RATE=100000)


@pytest.fixture(scope='module')
def urls(config, tmp_path_factory):
    """The URLs of two emulators: in this process, in a subprocess."""
    with harness.pair(config, tmp_path_factory) as pair:
        yield pair


def call(url, method, path, user=None, password=None, **kwargs):
    kwargs.setdefault('timeout', 30)
    auth = (user, password) if user else None
    return requests.request(method, url + path, auth=auth, **kwargs)


def admin(url, method, path, **kwargs):
    return call(url, method, path, 'admin', ADMIN_PASSWORD, **kwargs)


def message_id(answer):
    return answer.json()['error']['@Message.ExtendedInfo'][0][
        'MessageId'].rpartition('.')[2]


def account_secrets(sim):
    """``{name: resourceVersion}`` of the account Secrets."""
    status, body = backend.admin_request(
        sim, 'GET', '/api/v1/namespaces/%s/secrets?labelSelector=%s%%3Dtrue'
        % (NAMESPACE, secretaccounts.LABEL))
    assert status == 200, body
    return {s['metadata']['name']: s['metadata']['resourceVersion']
            for s in body['items']}


def create(url, user, password, role, **oem):
    body = {'UserName': user, 'Password': password, 'RoleId': role}
    if oem:
        body['Oem'] = {'SushyKubevirt': oem}
    return admin(url, 'POST', ACCOUNTS, json=body)


def status(url, user, password, path=ACCOUNTS + '/'):
    return call(url, 'GET', path + (user if path.endswith('/') else ''),
                user, password).status_code


def test_an_account_made_by_an_administrator_logs_in(urls, systems):
    here, other = urls
    made = create(here, 'alice', 'alice-pass-1', 'Operator',
                  Namespaces=[conftest.OWN])
    assert made.status_code == 201, made.text
    assert made.headers['Location'].endswith(ACCOUNTS + '/alice')
    assert made.json()['RoleId'] == 'Operator'
    assert made.json()['Password'] is None
    listed = call(here, 'GET', SYSTEMS, 'alice', 'alice-pass-1')
    assert listed.status_code == 200, listed.text
    assert sorted(m['@odata.id'] for m in listed.json()['Members']) == \
        systems[conftest.OWN]
    harness.wait_until(lambda: status(other, 'alice', 'alice-pass-1') ==
                       200, AGREE, 0.1, 'the other emulator knows alice')
    login = requests.post(other + SESSIONS, timeout=30, json={
        'UserName': 'alice', 'Password': 'alice-pass-1'})
    assert login.status_code == 201, login.text
    token = {'X-Auth-Token': login.headers['X-Auth-Token']}
    assert requests.get(here + SYSTEMS, headers=token,
                        timeout=30).status_code == 200
    service = admin(here, 'GET', '/redfish/v1/AccountService').json()
    assert (service['MinPasswordLength'],
            service['MaxPasswordLength']) == (8, 72)
    assert made.json()['RoleId@Redfish.AllowableValues'] == [
        'Administrator', 'Operator', 'ReadOnly']


def test_a_warm_basic_request_makes_no_api_call(urls, sim):
    here, _ = urls
    assert status(here, 'admin', ADMIN_PASSWORD) == 200
    backend.log_complete(sim)
    sim.request_log.clear()
    for _ in range(5):
        assert status(here, 'admin', ADMIN_PASSWORD) == 200
    backend.log_complete(sim)
    # The security log's Events are written by its own thread after the
    # answers (accounts.recorder): not calls of the requests.
    assert [e for e in harness.api_calls(sim)
            if e.get('path') != '/version'
            and e.get('resource') != 'events'] == []
    # The log does see the emulator's calls: a creation is one.
    assert create(here, 'ivan', 'ivan-pass-01', 'ReadOnly').status_code \
        == 201
    backend.log_complete(sim)
    assert 'create' in [e['verb'] for e in harness.api_calls(sim)]


def test_role_and_password_changes_apply_everywhere(urls, sim):
    here, other = urls
    create(here, 'bob', 'bob-pass-01', 'Operator')
    current = admin(here, 'GET', ACCOUNTS + '/bob')
    etag = current.headers['ETag']
    changed = admin(here, 'PATCH', ACCOUNTS + '/bob', headers={
        'If-Match': etag}, json={'RoleId': 'ReadOnly'})
    assert changed.status_code == 200, changed.text
    assert changed.json()['RoleId'] == 'ReadOnly'
    stale = admin(here, 'PATCH', ACCOUNTS + '/bob', headers={
        'If-Match': etag}, json={'RoleId': 'Administrator'})
    assert stale.status_code == 412, stale.text
    harness.wait_until(
        lambda: call(other, 'GET', ACCOUNTS + '/bob', 'bob',
                     'bob-pass-01').json().get('RoleId') == 'ReadOnly',
        AGREE, 0.1, 'the other emulator sees the new role')

    # ConfigureSelf: bob changes his own Password, nothing more.
    before = account_secrets(sim)
    refused = call(other, 'PATCH', ACCOUNTS + '/bob', 'bob', 'bob-pass-01',
                   json={'RoleId': 'Administrator'})
    assert refused.status_code == 403, refused.text
    assert message_id(refused) == 'InsufficientPrivilege'
    assert account_secrets(sim) == before
    own = call(other, 'PATCH', ACCOUNTS + '/bob', 'bob', 'bob-pass-01',
               json={'Password': 'bob-pass-02'})
    assert own.status_code == 200, own.text
    harness.wait_until(lambda: status(here, 'bob', 'bob-pass-01') == 401,
                       AGREE, 0.1, 'the old password refused here')
    assert status(here, 'bob', 'bob-pass-02') == 200
    assert status(other, 'bob', 'bob-pass-01') == 401


def test_operator_and_readonly_change_nothing(urls, sim):
    here, _ = urls
    create(here, 'carol', 'carol-pass-1', 'Operator')
    create(here, 'dave', 'dave-pass-01', 'ReadOnly')
    before = account_secrets(sim)
    for user, password in (('carol', 'carol-pass-1'),
                           ('dave', 'dave-pass-01')):
        for method, path, body in (
                ('POST', ACCOUNTS, {'UserName': 'eve', 'RoleId': 'ReadOnly',
                                    'Password': 'eve-pass-01'}),
                ('PATCH', ACCOUNTS + '/admin', {'Password': 'taken-over'}),
                ('PATCH', ACCOUNTS + '/' + user, {'RoleId': 'Administrator'}),
                ('DELETE', ACCOUNTS + '/admin', None)):
            answer = call(here, method, path, user, password, json=body)
            assert answer.status_code == 403, (user, method, answer.text)
            assert message_id(answer) == 'InsufficientPrivilege'
    assert account_secrets(sim) == before


@pytest.mark.parametrize('body, code, wanted', [
    ({'Password': 'x' * 12, 'RoleId': 'Operator'}, 400, 'PropertyMissing'),
    ({'UserName': 'frank', 'Password': 'x' * 12}, 400, 'PropertyMissing'),
    ({'UserName': 'frank', 'Password': 'x' * 12, 'RoleId': 'Root'}, 400,
     'PropertyValueNotInList'),
    ({'UserName': 'frank', 'Password': 12345678, 'RoleId': 'Operator'}, 400,
     'PropertyValueTypeError'),
    ({'UserName': 'frank', 'Password': 'x' * 73, 'RoleId': 'Operator'}, 400,
     'StringValueTooLong'),
    ({'UserName': 'frank', 'Password': '\u00e9' * 37, 'RoleId': 'Operator'},
     400, 'StringValueTooLong'),
    ({'UserName': 'frank', 'Password': 'x' * 72 + '\ud800',
      'RoleId': 'Operator'}, 400, 'StringValueTooLong'),
    ({'UserName': 'frank', 'Password': 'short', 'RoleId': 'Operator'}, 400,
     'PropertyValueFormatError'),
    ({'UserName': 'Frank!', 'Password': 'x' * 12, 'RoleId': 'Operator'}, 400,
     'PropertyValueFormatError'),
    ({'UserName': 'frank', 'Password': 'x' * 12, 'RoleId': 'Operator',
      'Enabled': False}, 400, 'PropertyUnknown'),
    ({'UserName': 'frank', 'Password': 'x' * 12, 'RoleId': 'Operator',
      'Oem': {'SushyKubevirt': {'LabelSelector': 'a in ('}}}, 400,
     'PropertyValueFormatError'),
    ({'UserName': 'frank', 'Password': 'x' * 12, 'RoleId': 'Operator',
      'Oem': {'SushyKubevirt': {'Namespaces': []}}}, 400,
     'PropertyValueFormatError'),
    ({'UserName': 'frank', 'Password': 'x' * 12, 'RoleId': 'Operator',
      'Oem': {'Other': {}}}, 400, 'PropertyUnknown'),
    ({'UserName': 'admin', 'Password': 'x' * 12, 'RoleId': 'Operator'}, 409,
     'ResourceAlreadyExists'),
])
def test_bad_creations_change_nothing(urls, sim, body, code, wanted):
    here, _ = urls
    before = account_secrets(sim)
    answer = admin(here, 'POST', ACCOUNTS, json=body)
    assert answer.status_code == code, answer.text
    assert message_id(answer) == wanted
    assert account_secrets(sim) == before


@pytest.mark.parametrize('body, wanted', [
    ({'RoleId': 'Root'}, 'PropertyValueNotInList'),
    ({'Password': 'y' * 80}, 'StringValueTooLong'),
    ({'UserName': 'other'}, 'PropertyUnknown'),
    ({'RoleId': 3}, 'PropertyValueTypeError'),
])
def test_bad_changes_change_nothing(urls, sim, body, wanted):
    here, _ = urls
    if status(here, 'admin', ADMIN_PASSWORD,
              ACCOUNTS + '/grace') == 404:
        create(here, 'grace', 'grace-pass-1', 'ReadOnly')
    before = account_secrets(sim)
    answer = admin(here, 'PATCH', ACCOUNTS + '/grace', json=body)
    assert answer.status_code == 400, answer.text
    assert message_id(answer) == wanted
    assert account_secrets(sim) == before


def test_a_deleted_account_and_its_sessions_are_refused(urls):
    here, other = urls
    create(here, 'heidi', 'heidi-pass-1', 'Operator')
    login = requests.post(here + SESSIONS, timeout=30, json={
        'UserName': 'heidi', 'Password': 'heidi-pass-1'})
    assert login.status_code == 201, login.text
    token = {'X-Auth-Token': login.headers['X-Auth-Token']}
    harness.wait_until(lambda: status(other, 'heidi', 'heidi-pass-1') ==
                       200, AGREE, 0.1, 'the other emulator knows heidi')
    gone = admin(here, 'DELETE', ACCOUNTS + '/heidi')
    assert gone.status_code == 204, gone.text
    assert status(here, 'heidi', 'heidi-pass-1') == 401
    assert requests.get(here + SYSTEMS, headers=token,
                        timeout=30).status_code == 401
    harness.wait_until(lambda: status(other, 'heidi', 'heidi-pass-1') ==
                       401, AGREE, 0.1, 'the other emulator refuses heidi')
    assert requests.get(other + SYSTEMS, headers=token,
                        timeout=30).status_code == 401
    assert admin(here, 'DELETE', ACCOUNTS + '/heidi').status_code == 404
