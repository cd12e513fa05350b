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

"""What belongs to a user stays theirs; events never cross tenants."""

import os

import pytest
from tests.functional.events import receiver as receivermod
from tests.functional.tenancy import conftest

from sushy_kubevirt.kubevirt import identity

SUBSCRIPTIONS = '/redfish/v1/EventService/Subscriptions'
SESSIONS = '/redfish/v1/SessionService/Sessions'
VMS = ('kubevirt.io', 'virtualmachines')


def edit_cores(sim, namespace, name, cores):
    def edit(vm):
        domain = vm['spec']['template']['spec']['domain']
        domain.setdefault('cpu', {})['cores'] = cores
    sim.store.mutate(sim.store.resource(*VMS), namespace, name, edit)


def vm_names(sim, namespace):
    items, _ = sim.store.list(sim.store.resource(*VMS), namespace)
    return sorted(vm['metadata']['name'] for vm in items)


@pytest.fixture
def receivers(clients):
    """user -> a Receiver subscribed as that user (deleted after)."""
    made, subs = {}, []
    try:
        for user in ('admin', 'op-a', 'op-b'):
            made[user] = receivermod.Receiver().__enter__()
            answer = clients[user].request('POST', SUBSCRIPTIONS, json={
                'Destination': made[user].url, 'Protocol': 'Redfish',
                'RegistryPrefixes': ['ResourceEvent']})
            assert answer.status_code == 201, answer.text
            subs.append((user, answer.headers['Location']))
        yield made
    finally:
        for user, location in subs:
            clients[user].request('DELETE', location)
        for receiver in made.values():
            receiver.__exit__()


def origins(receiver):
    return {e['OriginOfCondition']['@odata.id'] for e in receiver.events()}


def test_subscriptions_belong_to_their_owner(clients, receivers):
    def listed(user):
        return [m['@odata.id'] for m in
                clients[user].get(SUBSCRIPTIONS).json()['Members']]
    mine, theirs = listed('op-a'), listed('op-b')
    assert len(mine) == 1 and len(theirs) == 1
    assert set(mine) | set(theirs) <= set(listed('admin'))
    assert clients['op-b'].get(mine[0]).status_code == 404
    assert clients['op-b'].request('DELETE', mine[0]).status_code == 404
    assert clients['op-a'].get(mine[0]).status_code == 200
    assert clients['ro-a'].request('POST', SUBSCRIPTIONS, json={
        'Destination': 'http://127.0.0.1:9/x'}).status_code == 403


def path_of(sim, namespace, name):
    vm = sim.store.get(sim.store.resource(*VMS), namespace, name)
    return '/redfish/v1/Systems/%s' % identity.firmware_uuid(vm)


def test_events_never_cross_tenants(sim, receivers):
    own, foreign = vm_names(sim, conftest.OWN), vm_names(
        sim, conftest.FOREIGN)
    edit_cores(sim, conftest.OWN, own[0], 3)
    edit_cores(sim, conftest.FOREIGN, foreign[0], 3)
    # Markers after both: a subscriber's events arrive in order.
    edit_cores(sim, conftest.OWN, own[1], 3)
    edit_cores(sim, conftest.FOREIGN, foreign[1], 3)
    a, b, admin = receivers['op-a'], receivers['op-b'], receivers['admin']
    mine = {path_of(sim, conftest.OWN, name) for name in own[:2]}
    theirs = {path_of(sim, conftest.FOREIGN, name) for name in foreign[:2]}
    a.wait(lambda r: path_of(sim, conftest.OWN, own[1]) in origins(r))
    b.wait(lambda r: path_of(sim, conftest.FOREIGN, foreign[1])
           in origins(r))
    admin.wait(lambda r: origins(r) == mine | theirs)
    assert origins(a) == mine
    assert origins(b) == theirs


def test_test_events_reach_only_who_may_read_the_origin(
        clients, systems, receivers):
    def submit(path, event_id):
        answer = clients['admin'].request(
            'POST', '/redfish/v1/EventService/Actions/'
            'EventService.SubmitTestEvent', json={
                'EventId': event_id, 'OriginOfCondition': path,
                'MessageId': 'ResourceEvent.1.4.2.ResourceChanged'})
        assert answer.status_code == 204, answer.text
    submit(systems[conftest.OWN][0], 'own')
    submit(systems[conftest.FOREIGN][0], 'foreign')
    submit('/redfish/v1/Chassis', 'none')

    def ids(receiver):
        return [e['EventId'] for e in receiver.events()]
    receivers['admin'].wait(lambda r: len(ids(r)) == 3)
    receivers['op-a'].wait(lambda r: ids(r))
    receivers['op-b'].wait(lambda r: ids(r))
    assert ids(receivers['op-a']) == ['own']
    assert ids(receivers['op-b']) == ['foreign']


def test_a_changed_account_applies_to_the_next_events(
        sim, receivers, accounts_file):
    original = accounts_file.read_text()
    moved = dict(conftest.ACCOUNTS, **{'op-a': ('Operator',
                                                [conftest.FOREIGN])})
    replacement = accounts_file.with_suffix('.new')
    replacement.write_text(conftest.accounts_yaml(moved))
    os.replace(replacement, accounts_file)
    try:
        own, foreign = vm_names(sim, conftest.OWN), vm_names(
            sim, conftest.FOREIGN)
        edit_cores(sim, conftest.OWN, own[2], 4)
        edit_cores(sim, conftest.FOREIGN, foreign[2], 4)
        a = receivers['op-a']
        a.wait(lambda r: origins(r))
        assert origins(a) == {path_of(sim, conftest.FOREIGN, foreign[2])}
    finally:
        replacement.write_text(original)
        os.replace(replacement, accounts_file)


def test_sessions_are_their_owners(clients):
    login = clients['op-a'].request('POST', SESSIONS, json={
        'UserName': 'op-a', 'Password': conftest.PASSWORD})
    assert login.status_code == 201, login.text
    location = login.headers['Location']
    for user in ('op-b', 'admin'):
        assert clients[user].get(location).status_code == 404
        assert clients[user].request('DELETE', location).status_code == 404
    assert clients['op-a'].get(location).json()['UserName'] == 'op-a'
    assert clients['op-a'].request('DELETE', location).status_code == 204


def test_account_service_publishes_roles_and_accounts(clients):
    admin, op_a = clients['admin'], clients['op-a']
    service = op_a.get('/redfish/v1/AccountService').json()
    roles = op_a.get(service['Roles']['@odata.id']).json()['Members']
    assert [r['@odata.id'].rpartition('/')[2] for r in roles] == [
        'Administrator', 'Operator', 'ReadOnly']
    readonly = op_a.get(roles[2]['@odata.id']).json()
    assert readonly['AssignedPrivileges'] == ['Login', 'ConfigureSelf']
    accounts = service['Accounts']['@odata.id']
    assert len(admin.get(accounts).json()['Members']) == 4
    mine, = op_a.get(accounts).json()['Members']
    account = op_a.get(mine['@odata.id']).json()
    assert (account['UserName'], account['RoleId']) == ('op-a', 'Operator')
    assert account['Oem']['SushyKubevirt']['Namespaces'] == [conftest.OWN]
    assert op_a.get(accounts + '/op-b').status_code == 404
    assert admin.get(accounts + '/op-b').json()['RoleId'] == 'Operator'
