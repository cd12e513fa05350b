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

"""One Chassis per namespace, over HTTP, as each account sees them."""

import uuid

import pytest
from tests.functional.tenancy import conftest

NAMESPACES = (conftest.OWN, conftest.FOREIGN)


def chassis_path(namespace):
    """The path of ``namespace``'s Chassis: a fixed UUIDv5 of the name."""
    return '/redfish/v1/Chassis/%s' % uuid.uuid5(
        uuid.UUID('a4c6f1de-3b52-5e0f-9d7c-2f8e61b0c935'), namespace)


def ids(links):
    return sorted(link['@odata.id'] for link in links)


def ok(client, path):
    answer = client.get(path)
    assert answer.status_code == 200, (path, answer.text)
    return answer.json()


def test_each_namespace_is_a_chassis_of_its_systems(clients, systems):
    admin = clients['admin']
    assert ids(ok(admin, '/redfish/v1/Chassis')['Members']) == \
        sorted(chassis_path(ns) for ns in NAMESPACES)
    for namespace in NAMESPACES:
        path = chassis_path(namespace)
        body = ok(admin, path)
        assert body['Name'] == namespace
        assert body['Id'] == body['UUID'] == path.rpartition('/')[2]
        managers = [s.replace('/Systems/', '/Managers/')
                    for s in systems[namespace]]
        assert ids(body['Links']['ComputerSystems']) == systems[namespace]
        assert ids(body['Links']['ManagersInChassis']) == managers
        assert ids(body['Links']['ManagedBy']) == managers
        thermal = ok(admin, path + '/Thermal')['Temperatures']
        related = {item['@odata.id'].partition('/Processors/')[0]
                   for sensor in thermal for item in sensor['RelatedItem']}
        assert related == set(systems[namespace]) | {path}
        assert len(thermal) == len(systems[namespace]) + 1  # the intake
        adapters = ok(admin, path + '/NetworkAdapters')['Members']
        assert [a['@odata.id'].rpartition('/')[2] for a in adapters] == \
            [s.rpartition('/')[2] for s in systems[namespace]]
        for system, manager in zip(systems[namespace], managers):
            assert ids(ok(admin, system)['Links']['Chassis']) == [path]
            assert ids(ok(admin, manager)['Links']['ManagerForChassis']) \
                == [path]


def test_the_namespace_name_is_an_alias(clients):
    answer = clients['op-a'].get('/redfish/v1/Chassis/' + conftest.OWN)
    assert answer.status_code == 307, answer.text
    assert answer.headers['Location'].endswith(chassis_path(conftest.OWN))


@pytest.mark.parametrize('user', ['op-a', 'ro-a'])
def test_a_foreign_chassis_does_not_exist(clients, systems, user):
    client = clients[user]
    assert ids(ok(client, '/redfish/v1/Chassis')['Members']) == \
        [chassis_path(conftest.OWN)]
    foreign = chassis_path(conftest.FOREIGN)
    other = systems[conftest.FOREIGN][0].rpartition('/')[2]
    adapters = chassis_path(conftest.OWN) + '/NetworkAdapters'
    assert [a['@odata.id'] for a in ok(client, adapters)['Members']] == [
        adapters + s[len('/redfish/v1/Systems'):]
        for s in systems[conftest.OWN]]
    for path in (foreign, foreign + '/Thermal',
                 foreign + '/NetworkAdapters',
                 foreign + '/NetworkAdapters/' + other,
                 adapters + '/' + other, adapters + '/' + other + '/Ports',
                 '/redfish/v1/Chassis/' + conftest.FOREIGN,
                 '/redfish/v1/Chassis/nope'):
        answer = client.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.json()['error']['@Message.ExtendedInfo'][0][
            'MessageId'].endswith('.ResourceNotFound')
    led = ok(clients['admin'], foreign).get('IndicatorLED')
    answer = client.request('PATCH', foreign, json={'IndicatorLED': 'Off'})
    assert answer.status_code in (403, 404), answer.text
    assert ok(clients['admin'], foreign).get('IndicatorLED') == led


def test_an_own_chassis_led_changes(clients):
    path = chassis_path(conftest.OWN)
    client = clients['op-a']
    for state in ('Off', 'Lit'):
        answer = client.request('PATCH', path, json={'IndicatorLED': state})
        assert answer.status_code == 204, answer.text
        assert ok(client, path)['IndicatorLED'] == state
