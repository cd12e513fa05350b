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

"""System, Manager and Chassis links agree both ways.

That every link resolves is tests/functional/conformance/test_links.py.
"""

import requests


def _get(emulator, path):
    return requests.get(emulator.url + path, timeout=10).json()


def _ids(links):
    return {link['@odata.id'] for link in links}


def test_managers_systems_and_chassis_agree(emulator):
    chassis = {m['@odata.id']: _get(emulator, m['@odata.id'])
               for m in _get(emulator, '/redfish/v1/Chassis')['Members']}
    managers = {m['@odata.id']: _get(emulator, m['@odata.id'])
                for m in _get(emulator, '/redfish/v1/Managers')['Members']}
    systems = _get(emulator, '/redfish/v1/Systems')['Members']
    assert systems and managers and chassis
    for member in systems:
        system = _get(emulator, member['@odata.id'])
        for manager in _ids(system['Links']['ManagedBy']):
            assert member['@odata.id'] in _ids(
                managers[manager]['Links']['ManagerForServers'])
        for path in _ids(system['Links']['Chassis']):
            assert member['@odata.id'] in _ids(
                chassis[path]['Links']['ComputerSystems'])
    for path, manager in managers.items():
        for_chassis = _ids(manager['Links']['ManagerForChassis'])
        assert for_chassis, '%s lists no chassis' % path
        for chassis_path in for_chassis:
            assert path in _ids(chassis[chassis_path]['Links']['ManagedBy'])
    for path, body in chassis.items():
        for manager in _ids(body['Links'].get('ManagedBy', [])):
            assert path in _ids(managers[manager]['Links'][
                'ManagerForChassis'])
