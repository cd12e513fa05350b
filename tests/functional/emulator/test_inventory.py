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

"""Inspection resources (as Ironic's redfish inspect reads them) and BIOS."""

import requests
from tests.functional.emulator import harness


def test_inspection_resources_are_consistent(sim, redfish, machine):
    stored = harness.vm(sim, machine.name)['spec']
    domain = stored['template']['spec']['domain']
    system = redfish.get_system(machine.path)

    assert system.memory_summary.size_gib == 2
    assert domain['memory']['guest'] == '2Gi'

    processors = system.processors
    assert processors.summary.count == 2
    members = processors.get_members()
    assert [p.identity for p in members] == ['CPU0']
    assert members[0].total_cores == 2
    assert system.json['ProcessorSummary']['Count'] == 2

    mac = domain['devices']['interfaces'][0]['macAddress'].lower()
    assert list(system.ethernet_interfaces.summary) == [mac]
    assert system.simple_storage.disks_sizes_bytes == [10 * 1024 ** 3]
    assert stored['dataVolumeTemplates'][0]['spec']['storage'][
        'resources']['requests']['storage'] == '10Gi'


def test_bios_attributes_are_kept_on_the_vm(sim, emulator, redfish,
                                            machine):
    system = redfish.get_system(machine.path)
    assert system.bios.attributes['ProcTurboMode'] == 'Enabled'
    assert system.bios_version == '1.0.0'
    url = emulator.url + machine.path + '/Bios'
    response = requests.patch(url + '/Settings', json={
        'Attributes': {'ProcTurboMode': 'Disabled'}})
    assert response.status_code == 204
    bios = redfish.get_system(machine.path).bios
    assert bios.pending_attributes['ProcTurboMode'] == 'Disabled'
    assert bios.attributes['ProcTurboMode'] == 'Enabled', 'until a boot'
    annotations = harness.vm(sim, machine.name)['metadata']['annotations']
    assert '"ProcTurboMode": "Disabled"' in annotations[
        'sushy-kubevirt.io/bios-pending']

    before = harness.vm(sim, machine.name)
    for attributes in ({'NoSuchThing': 1}, {'BootMode': 'Floppy'}, {}):
        response = requests.patch(url + '/Settings',
                                  json={'Attributes': attributes})
        assert response.status_code == 400, response.text
    assert harness.vm(sim, machine.name) == before

    response = requests.post(url + '/Actions/Bios.ResetBios')
    assert response.status_code == 204
    assert redfish.get_system(machine.path).bios.pending_attributes[
        'ProcTurboMode'] == 'Enabled'
