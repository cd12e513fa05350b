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

"""Every route x role x own or foreign namespace, over HTTP.

The routes are those the plugin declares (``plugin.uri_table``), which a
unit test holds equal to every route the emulator serves. A refusal is a
403 ``InsufficientPrivilege`` when the role lacks the route's privilege,
a 404 for a System (or its Manager), or a Chassis, outside the account's
namespaces, a
401 for a user without a role; and a refused request changes nothing in
the cluster: the refusals are sent with bodies that would change it.
"""

import re

import pytest
from tests.functional.tenancy import conftest
from tests.functional.tenancy import test_chassis

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt import plugin

#: Rules whose ``<identity>`` is a System's (a Manager's is its System's)
#: or a namespace's Chassis.
SCOPED = re.compile(r'^/redfish/v1/(Systems|Managers|Chassis)/<identity>')
#: The legacy BIOS URIs: a 308 to the schema's, whatever the System.
REDIRECTS = re.compile(r'/BIOS(/|$)')
#: Bodies that would change something, for the refusals.
BODIES = {
    ('POST', 'ComputerSystem.Reset'): {'ResetType': 'On'},
    ('PATCH', '/Systems/<identity>'): {'Boot': {
        'BootSourceOverrideTarget': 'Pxe',
        'BootSourceOverrideEnabled': 'Continuous'}},
    ('PATCH', '/SecureBoot'): {'SecureBootEnable': True},
    ('POST', 'VirtualMedia.InsertMedia'): {
        'Image': 'http://127.0.0.1:9/refused.iso'},
    ('PATCH', '/VirtualMedia/<device>'): {'VerifyCertificate': True},
    ('PATCH', '/Bios/Settings'): {'Attributes': {'ProcTurboMode':
                                                 'Disabled'}},
    ('PATCH', '/Chassis/<identity>'): {'IndicatorLED': 'Lit'},
    ('POST', '/EventService/Subscriptions'): {
        'Destination': 'http://127.0.0.1:9/refused', 'Protocol': 'Redfish'},
    ('POST', 'SubmitTestEvent'): {'MessageId': 'ResourceEvent.1.4.2.'
                                               'ResourceCreated'},
    ('POST', 'UpdateService.SimpleUpdate'): {
        'ImageURI': 'http://127.0.0.1:9/bios-9.9.9.bin'},
    ('POST', '/AccountService/Accounts'): {
        'UserName': 'intruder', 'Password': 'intruder-password',
        'RoleId': 'Administrator'},
}


def routes():
    """``(rule, method, privilege)`` of every declared route."""
    return [(rule, method, privilege)
            for rule, needs, _ in plugin.uri_table()
            for method, privilege in sorted(needs.items())]


def body_for(method, rule):
    if method in ('GET', 'DELETE'):
        return None
    for (m, part), body in BODIES.items():
        if m == method and rule.endswith(part) or (
                m == method and part in rule and '/' not in part):
            return body
    return {}


#: Ids that may be gone when read (no certificate; a ClearLog of the
#: matrix hides the log entries read after it).
CLEARED = re.compile('<(cert_id|entry_id|record_id)>')


def allows(user, privilege):
    role = conftest.ACCOUNTS[user][0]
    return privilege == privileges.NO_AUTH or \
        privilege in privileges.ROLES[role]


@pytest.fixture(scope='module')
def ids(clients, systems):
    """Real ids under the own namespace's first System (as admin)."""
    admin = clients['admin']
    system = systems[conftest.OWN][0]

    def first(path):
        members = admin.get(path).json()['Members']
        return members[0]['@odata.id'].rstrip('/').rpartition('/')[2]
    storage = first(system + '/Storage')
    drives = admin.get('%s/Storage/%s' % (system, storage)).json()['Drives']
    session = admin.request('POST', '/redfish/v1/SessionService/Sessions',
                            json={'UserName': 'admin',
                                  'Password': conftest.PASSWORD})
    assert session.status_code == 201, session.text
    subscription = admin.request(
        'POST', '/redfish/v1/EventService/Subscriptions',
        json={'Destination': 'http://127.0.0.1:9/admin',
              'Protocol': 'Redfish'})
    assert subscription.status_code == 201, subscription.text
    cleared = admin.request('POST', system + '/LogServices/Log/Actions/'
                            'LogService.ClearLog', json={})
    assert cleared.status_code == 204, cleared.text   # an entry to read
    manager = '/redfish/v1/Managers/' + system.rpartition('/')[2]
    return {
        'processor_id': first(system + '/Processors'),
        'memory_id': first(system + '/Memory'),
        'storage_id': storage, 'stg_id': storage,
        'drv_id': drives[0]['@odata.id'].rpartition('/')[2],
        'vol_id': first('%s/Storage/%s/Volumes' % (system, storage)),
        'nic_id': first(system + '/EthernetInterfaces'),
        'simple_storage_id': first(system + '/SimpleStorage'),
        'device': 'Cd', 'cert_id': 'none', 'path:filename': 'none',
        'sub_id': subscription.json()['Id'],
        'session_id': session.json()['Id'],
        'account_id': 'admin', 'role_id': 'ReadOnly',
        'entry_id': first(system + '/LogServices/Log/Entries'),
        'record_id': first(manager + '/LogServices/SecurityLog/Entries'),
        'member': first('/redfish/v1/UpdateService/FirmwareInventory'),
        'task_id': 'none',
        'adapter_id': system.rpartition('/')[2],
        'port_id': first('%s/NetworkAdapters/%s/Ports' % (
            test_chassis.chassis_path(conftest.OWN),
            system.rpartition('/')[2])),
    }


def concrete(rule, system, ids, namespace=conftest.OWN):
    def value(match):
        name = match.group(1)
        if name == 'identity' and rule.startswith('/redfish/v1/Chassis/'):
            return test_chassis.chassis_path(namespace).rpartition('/')[2]
        if name == 'identity':
            return system.rpartition('/')[2]
        return ids[name]
    path = re.sub(r'<([^>]+)>', value, rule)
    return path if path == '/redfish/v1/' else path.rstrip('/')


def cluster_state(sim):
    """resourceVersion of every VM, DataVolume and Secret."""
    state = {}
    for group, plural in (('kubevirt.io', 'virtualmachines'),
                          ('cdi.kubevirt.io', 'datavolumes'),
                          ('', 'secrets')):
        items, _ = sim.store.list(sim.store.resource(group, plural))
        for obj in items:
            meta = obj['metadata']
            state[plural, meta['namespace'], meta['name']] = \
                meta['resourceVersion']
    return state


def cases():
    """``(user, rule, method, privilege, namespace)`` of the matrix."""
    return [(user, rule, method, privilege, namespace)
            for user in conftest.ACCOUNTS if user != 'op-b'
            for rule, method, privilege in routes()
            for namespace in ((conftest.OWN, conftest.FOREIGN)
                              if SCOPED.match(rule) else (conftest.OWN,))]


def refused(case):
    user, rule, _, privilege, namespace = case
    return not allows(user, privilege) or (
        namespace == conftest.FOREIGN and
        conftest.ACCOUNTS[user][1] is not None)


def test_the_matrix_lists_every_route():
    declared = {(rule, method) for rule, method, _ in routes()}
    assert {(rule, method) for _, rule, method, _, _ in cases()} \
        == declared
    assert len(declared) > 70


def test_refusals_change_nothing(sim, clients, systems, ids):
    before = cluster_state(sim)
    seen = []
    for case in filter(refused, cases()):
        user, rule, method, privilege, namespace = case
        path = concrete(rule, systems[namespace][0], ids, namespace)
        answer = clients[user].request(method, path,
                                       json=body_for(method, rule))
        seen.append((user, method, rule, namespace, answer.status_code))
        if not allows(user, privilege):
            assert answer.status_code == 403, (case, answer.text)
            assert answer.json()['error']['@Message.ExtendedInfo'][0][
                'MessageId'].endswith('.InsufficientPrivilege')
        elif REDIRECTS.search(rule):
            assert answer.status_code in (308, 404), (case, answer.text)
        else:
            assert answer.status_code == 404, (case, answer.text)
    assert len(seen) > 90
    assert cluster_state(sim) == before


def test_a_user_without_a_role_is_refused(clients, systems, ids):
    stranger = clients['stranger']
    for rule, method, privilege in routes():
        if privilege == privileges.NO_AUTH:
            continue
        path = concrete(rule, systems[conftest.OWN][0], ids)
        answer = stranger.request(method, path, json=body_for(method, rule))
        assert answer.status_code == 401, (rule, method, answer.text)
    login = stranger.request('POST', '/redfish/v1/SessionService/Sessions',
                             json={'UserName': 'stranger',
                                   'Password': conftest.PASSWORD})
    assert login.status_code == 401, login.text


def test_what_a_role_may_do_gets_past_authorization(clients, systems, ids):
    for case in cases():
        if refused(case):
            continue
        user, rule, method, privilege, namespace = case
        path = concrete(rule, systems[namespace][0], ids, namespace)
        # Streamed: the event stream's body never ends.
        answer = clients[user].request(
            method, path, json=None if method in ('GET', 'DELETE') else {},
            stream=True)
        with answer:
            assert answer.status_code not in (401, 403), (case, answer.text)
            if method == 'GET' and SCOPED.match(rule) and \
                    namespace == conftest.OWN and not CLEARED.search(rule):
                assert answer.status_code in (200, 308), (case, answer.text)


def members(client, path):
    return sorted(m['@odata.id'] for m in client.get(path).json()['Members'])


def test_collections_list_only_what_the_account_reaches(clients, systems):
    own, foreign = systems[conftest.OWN], systems[conftest.FOREIGN]
    assert members(clients['admin'], '/redfish/v1/Systems') == \
        sorted(own + foreign)
    for user in ('op-a', 'ro-a'):
        assert members(clients[user], '/redfish/v1/Systems') == own
        managers = members(clients[user], '/redfish/v1/Managers')
        assert [m.rpartition('/')[2] for m in managers] == \
            [s.rpartition('/')[2] for s in own]
    assert members(clients['op-b'], '/redfish/v1/Systems') == foreign
    chassis = clients['op-b'].get('/redfish/v1/Chassis').json()['Members']
    links = clients['op-b'].get(chassis[0]['@odata.id']).json()['Links']
    assert sorted(s['@odata.id'] for s in links['ComputerSystems']) == \
        foreign


def test_updates_reach_only_the_own_namespace(clients, systems, sim):
    own, foreign = systems[conftest.OWN], systems[conftest.FOREIGN]
    inventory = '/redfish/v1/UpdateService/FirmwareInventory'
    for user in ('op-a', 'ro-a'):
        listed = members(clients[user], inventory)
        assert {m.rpartition('/')[2].rpartition('-')[0] for m in listed} \
            == {s.rpartition('/')[2] for s in own}
        assert clients[user].get(
            '%s/%s-BIOS' % (inventory, foreign[0].rpartition('/')[2])
        ).status_code == 404
    before = cluster_state(sim)
    answer = clients['op-a'].request(
        'POST', '/redfish/v1/UpdateService/Actions/'
        'UpdateService.SimpleUpdate',
        json={'ImageURI': 'http://127.0.0.1:9/bios-9.9.9.bin',
              'Targets': [foreign[0]]})
    assert answer.status_code == 400, answer.text
    assert cluster_state(sim) == before


def test_no_alias_leads_outside(clients, sim):
    vm = sim.store.list(sim.store.resource('kubevirt.io', 'virtualmachines'),
                        conftest.FOREIGN)[0][0]
    for ident in (vm['metadata']['name'],
                  '%s.%s' % (conftest.FOREIGN, vm['metadata']['name'])):
        answer = clients['op-a'].get('/redfish/v1/Systems/' + ident)
        assert answer.status_code == 404, answer.text
        assert clients['op-b'].get(
            '/redfish/v1/Systems/' + ident).status_code == 307
