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

"""Storage, Drives and Volumes over HTTP, read by sushy as Ironic does."""

import requests
from tests.functional.emulator import harness

GIB = 1024 ** 3


def _add_disks(sim, machine):
    """A containerDisk, an emptyDisk and a CD-ROM next to the root disk."""
    rt = sim.store.resource(harness.VM_GROUP, 'virtualmachines')

    def mutate(vm):
        spec = vm['spec']['template']['spec']
        spec['domain']['devices']['disks'] += [
            {'name': 'tools', 'disk': {'bus': 'scsi'}},
            {'name': 'scratch', 'disk': {'bus': 'virtio'}},
            {'name': 'cd', 'cdrom': {'bus': 'sata'}}]
        spec['volumes'] += [
            {'name': 'tools', 'containerDisk': {'image': 'x/tools:1'}},
            {'name': 'scratch', 'emptyDisk': {'capacity': '2Gi'}},
            {'name': 'cd', 'containerDisk': {'image': 'x/iso:1'}}]
        return vm
    sim.store.mutate(rt, 'default', machine.name, mutate)


def _get(emulator, path):
    response = requests.get(emulator.url + path, timeout=10)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def test_storage_tree(sim, emulator, machine, redfish):
    _add_disks(sim, machine)
    base = machine.path + '/Storage'

    def synced():
        return len(_get(emulator, base)['Members']) == 3
    harness.wait_until(synced, 10, what='the new disks in the cache')
    sim.request_log.clear()

    system = _get(emulator, machine.path)
    assert system['Storage'] == {'@odata.id': base}
    collection = _get(emulator, base)
    assert [m['@odata.id'] for m in collection['Members']] == [
        base + '/virtio', base + '/scsi', base + '/sata']
    virtio = _get(emulator, base + '/virtio')
    assert virtio['StorageControllers'][0]['SupportedDeviceProtocols'] == [
        'PCIe']
    assert [d['@odata.id'] for d in virtio['Drives']] == [
        base + '/virtio/Drives/root', base + '/virtio/Drives/scratch']
    root = _get(emulator, base + '/virtio/Drives/root')
    assert root['CapacityBytes'] == 10 * GIB
    assert root['Links']['Volumes'] == [
        {'@odata.id': base + '/virtio/Volumes/root'}]
    tools = _get(emulator, base + '/scsi/Drives/tools')
    assert tools['CapacityBytes'] is None
    assert 'containerDisk' in tools['Description']
    cd = _get(emulator, base + '/sata/Drives/cd')
    assert cd['MediaType'] is None and cd['Protocol'] == 'SATA'
    assert root['MediaType'] is None, 'unknown medium'
    volumes = _get(emulator, base + '/virtio/Volumes')
    assert volumes['@Redfish.OperationApplyTimeSupport'][
        'SupportedValues'] == [], 'nothing can be created'
    assert 'Optical' in cd['Description'] and cd['Links']['Volumes'] == []
    assert _get(emulator, base + '/sata/Volumes')['Members'] == []
    volume = _get(emulator, base + '/virtio/Volumes/scratch')
    assert volume['CapacityBytes'] == 2 * GIB
    # Lists are the informers' own (a relist a real server may ask for).
    assert [e for e in harness.api_calls(sim) if e['verb'] != 'list'] == \
        [], 'served from the watch cache'

    sushy_system = redfish.get_system(machine.path)
    assert sushy_system.storage.drives_sizes_bytes == [2 * GIB, 10 * GIB]
    assert sushy_system.storage.volumes_sizes_bytes == [2 * GIB, 10 * GIB]
    response = requests.get(emulator.url + base + '/scsi/Volumes/tools')
    assert response.status_code == 404, 'no Volume of unknown size'
    assert sorted(sushy_system.simple_storage.disks_sizes_bytes) == [
        2 * GIB, 10 * GIB]
    simple = _get(emulator, machine.path + '/SimpleStorage')
    assert {m['@odata.id'].rpartition('/')[2]
            for m in simple['Members']} <= {'virtio', 'scsi', 'sata'}


def test_storage_errors(emulator, machine):
    base = emulator.url + machine.path + '/Storage'
    for path in ('/nvme', '/virtio/Drives/nope', '/virtio/Volumes/nope'):
        response = requests.get(base + path, timeout=10)
        assert response.status_code == 404, path
        assert response.json()['error']['@Message.ExtendedInfo'][0][
            'MessageId'].endswith('ResourceNotFound')
    response = requests.post(base + '/virtio/Volumes', json={}, timeout=10)
    assert response.status_code == 405
    assert response.headers['Allow'] == 'GET'
