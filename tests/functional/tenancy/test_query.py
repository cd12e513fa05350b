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

"""$expand reads each resource as the requester may: nothing more."""

import requests
from tests.functional.tenancy import conftest


def test_expand_shows_only_what_the_account_reads(emulator, clients,
                                                  systems):
    anonymous = requests.get(emulator.url + '/redfish/v1/', timeout=30,
                             params={'$expand': '*'}).json()
    assert list(anonymous['Systems']) == ['@odata.id']
    assert list(anonymous['Chassis']) == ['@odata.id']
    body = clients['op-a'].request(
        'GET', '/redfish/v1/Systems', params={'$expand': '.'}).json()
    assert sorted(m['@odata.id'] for m in body['Members']) == \
        systems[conftest.OWN]
    assert all(m['@odata.type'].startswith('#ComputerSystem.')
               for m in body['Members'])
    foreign = systems[conftest.FOREIGN][0]
    chassis = clients['op-a'].request(
        'GET', '/redfish/v1/Chassis', params={'$expand': '.'}).json()
    assert foreign not in str(chassis)
