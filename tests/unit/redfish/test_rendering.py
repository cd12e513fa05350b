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

"""The Storage and BIOS resources as rendered (pure dicts, no HTTP)."""

import json

from sushy_kubevirt.kubevirt import bios as model
from sushy_kubevirt.kubevirt import disks
from sushy_kubevirt.redfish import bios
from sushy_kubevirt.redfish import storage

SYS = '/redfish/v1/Systems/s'
ROOT = disks.Disk('root', 'virtio', 'disk', 10, 'dataVolume')
TOOLS = disks.Disk('tools', 'virtio', 'disk', None, 'containerDisk')
CD = disks.Disk('cd', 'sata', 'cdrom', 5, 'dataVolume')


def test_storage_per_bus():
    assert storage.collection('s', [ROOT, CD, TOOLS])['Members'] == [
        {'@odata.id': SYS + '/Storage/virtio'},
        {'@odata.id': SYS + '/Storage/sata'}]
    body = storage.storage('s', 'virtio', [ROOT, TOOLS])
    assert body['Drives'] == [
        {'@odata.id': SYS + '/Storage/virtio/Drives/root'},
        {'@odata.id': SYS + '/Storage/virtio/Drives/tools'}]
    assert body['StorageControllers'][0]['@odata.id'] == (
        SYS + '/Storage/virtio#/StorageControllers/0')


def test_drives():
    root = storage.drive('s', 'virtio', ROOT)
    assert root['CapacityBytes'] == 10 and root['Protocol'] == 'PCIe'
    assert root['MediaType'] is None and 'Description' not in root
    assert root['Links']['Volumes'] == [
        {'@odata.id': SYS + '/Storage/virtio/Volumes/root'}]
    tools = storage.drive('s', 'virtio', TOOLS)
    assert tools['CapacityBytes'] is None
    assert tools['Description'] == ('Capacity unknown: a containerDisk '
                                    'volume does not state its size')
    assert tools['Links']['Volumes'] == []
    cd = storage.drive('s', 'sata', CD)
    assert cd['Description'] == 'Optical drive (CD-ROM)'
    assert cd['Protocol'] == 'SATA' and cd['Links']['Volumes'] == []


def test_volumes_only_of_known_size():
    body = storage.volume_collection('s', 'virtio', [ROOT, TOOLS])
    assert body['Members'] == [
        {'@odata.id': SYS + '/Storage/virtio/Volumes/root'}]
    assert body['@Redfish.OperationApplyTimeSupport']['SupportedValues'] == []
    assert storage.volume('s', 'virtio', ROOT)['Links']['Drives'] == [
        {'@odata.id': SYS + '/Storage/virtio/Drives/root'}]


def test_bios_names_its_registry_and_settings():
    body = bios.resource('s', {'A': 1})
    assert body['@odata.id'] == SYS + '/Bios'
    assert body['AttributeRegistry'] == model.REGISTRY_ID
    assert body['@Redfish.Settings']['SettingsObject'] == {
        '@odata.id': SYS + '/Bios/Settings'}
    assert body['@Redfish.Settings']['SupportedApplyTimes'] == ['OnReset']
    assert body['Actions']['#Bios.ResetBios']['target'] == (
        SYS + '/Bios/Actions/Bios.ResetBios')
    assert bios.registry()['Id'] == model.REGISTRY_ID
    assert bios.registry_file()['Location'][0]['Uri'] == bios.REGISTRY_URI


def test_registry_entries():
    entries = {e['AttributeName']: e for e in
               bios.registry()['RegistryEntries']['Attributes']}
    assert set(entries) == set(model.ATTRIBUTES)
    assert entries['NumCores'] == {
        'AttributeName': 'NumCores', 'DisplayName': 'Number of Cores',
        'HelpText': bios._DERIVED_HELP['NumCores'],
        'Type': 'Integer', 'ReadOnly': True, 'Immutable': True,
        'Hidden': False, 'ResetRequired': False,
        'LowerBound': 1, 'UpperBound': 256, 'ScalarIncrement': 1}
    assert [v['ValueName'] for v in entries['EmbeddedSata']['Value']] == [
        'Ata', 'Ahci', 'Raid', 'Off']
    assert entries['SerialNumber']['MaxLength'] == 16
    assert 'DefaultValue' not in entries['BootMode'], 'mirrors firmware'
    json.dumps(bios.registry(), allow_nan=False)
