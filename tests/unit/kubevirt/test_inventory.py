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

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import disks
from sushy_kubevirt.kubevirt import inventory

GI = 1024 ** 3


@pytest.mark.parametrize('quantity, expected', [
    ('0', 0), ('1', 1), (1024, 1024), ('1Ki', 1024), ('1Mi', 2 ** 20),
    ('8Gi', 8 * GI), ('1Ti', 2 ** 40), ('2Pi', 2 ** 51), ('1Ei', 2 ** 60),
    ('1k', 1000), ('1K', 1000), ('1M', 10 ** 6), ('40G', 4 * 10 ** 10),
    ('1T', 10 ** 12), ('1.5Gi', 3 * 2 ** 29), ('0.5Gi', 2 ** 29),
    ('1e3', 1000), ('1E9', 10 ** 9), ('500m', 1), ('1500m', 2),
    (' 2Gi ', 2 * GI), ('.5Ki', 512), ('1234567', 1234567),
    ('1.1Gi', 1181116007), ('1e9', 10 ** 9),
])
def test_parse_quantity(quantity, expected):
    assert inventory.parse_quantity(quantity) == expected


@pytest.mark.parametrize('quantity', ['', 'Gi', '1GB', '1 Gi', '1gi',
                                      'abc', '1.2.3', None, '1Gi2'])
def test_parse_quantity_invalid(quantity):
    with pytest.raises(inventory.InvalidQuantity):
        inventory.parse_quantity(quantity)


def _mem(memory=None, requests=None, limits=None):
    domain = {}
    if memory:
        domain['memory'] = {'guest': memory}
    resources = {}
    if requests:
        resources['requests'] = {'memory': requests}
    if limits:
        resources['limits'] = {'memory': limits}
    if resources:
        domain['resources'] = resources
    return fx.vm(domain=domain)


@pytest.mark.parametrize('vm, expected', [
    (_mem('8Gi'), 8),
    (_mem('8Gi', requests='4Gi'), 8),
    (_mem(requests='4Gi'), 4),
    (_mem(limits='2Gi'), 2),
    (_mem('512Mi'), 1),
    (_mem('100Mi'), 1),
    (_mem('1536Mi'), 2),
    (_mem('1400Mi'), 1),
    (_mem('8G'), 7),
    (_mem('4294967296'), 4),
    (fx.vm(), None),
])
def test_total_memory_gib(vm, expected):
    assert inventory.total_memory_gib(vm) == expected


def _cpu(cpu=None, requests=None, limits=None):
    domain = {'cpu': cpu} if cpu else {}
    resources = {}
    if requests:
        resources['requests'] = {'cpu': requests}
    if limits:
        resources['limits'] = {'cpu': limits}
    if resources:
        domain['resources'] = resources
    return fx.vm(domain=domain)


@pytest.mark.parametrize('vm, total, sockets, cores, threads', [
    (fx.vm(), 1, 1, 1, 1),
    (_cpu({'cores': 4}), 4, 1, 4, 4),
    (_cpu({'sockets': 2, 'cores': 4, 'threads': 2}), 16, 2, 4, 8),
    (_cpu({'sockets': 2}), 2, 2, 1, 1),
    (_cpu({'model': 'host-passthrough'}, requests='3'), 3, 1, 3, 3),
    (_cpu(requests='500m'), 1, 1, 1, 1),
    (_cpu(requests='2', limits='2500m'), 3, 1, 3, 3),
])
def test_cpus_and_processors(vm, total, sockets, cores, threads):
    assert inventory.total_cpus(vm) == total
    procs = inventory.processors(vm)
    assert len(procs) == sockets
    for n, proc in enumerate(procs):
        assert proc['id'] == proc['Id'] == 'CPU%d' % n
        assert proc['socket'] == 'CPU %d' % n
        assert (proc['cores'], proc['threads']) == (cores, threads)
        assert set(proc) == {'id', 'Id', 'socket', 'model', 'vendor',
                             'cores', 'threads'}
    assert sum(p['threads'] for p in procs) == total


def test_processor_model():
    vm = _cpu({'model': 'Skylake-Server', 'cores': 2})
    assert inventory.processors(vm)[0]['model'] == 'Skylake-Server'
    assert inventory.processors(fx.vm())[0]['model'] == 'N/A'


def test_nics():
    vm = fx.vm(interfaces=[fx.nic('a', mac='02:00:00:00:00:0A'),
                           fx.nic('b'), fx.nic('c'),
                           fx.nic('d', mac='02-00-00-00-00-0d')])
    vmi = fx.vmi(interfaces=[{'name': 'b', 'mac': '02:00:00:00:00:0b'},
                             {'name': 'a', 'mac': 'ff:ff:ff:ff:ff:ff'}])
    assert inventory.nics(vm, vmi) == [
        {'id': '02:00:00:00:00:0a', 'mac': '02:00:00:00:00:0a'},
        {'id': '02:00:00:00:00:0b', 'mac': '02:00:00:00:00:0b'},
        {'id': '02:00:00:00:00:0d', 'mac': '02:00:00:00:00:0d'}]
    assert [n['mac'] for n in inventory.nics(vm, None)] == [
        '02:00:00:00:00:0a', '02:00:00:00:00:0d']
    assert inventory.nics(fx.vm(), None) == []


def test_a_value_that_is_no_mac_is_no_nic():
    vm = fx.vm(interfaces=[fx.nic('a', mac='../Systems/x'), fx.nic('b'),
                           fx.nic('c', mac='02:00:00:00:00:0c'),
                           fx.nic('d'), fx.nic('e')])
    vmi = fx.vmi(interfaces=[{'name': 'b', 'mac': '02:00\r\n:00:00:00:0b'},
                             {'name': 'd', 'mac': 42},
                             {'name': 'e', 'mac': '02:00:00:00:00:0e\u202e'}])
    assert [n['id'] for n in inventory.nics(vm, vmi)] == [
        '02:00:00:00:00:0c']


def _storage_vm():
    return fx.vm(
        disks=[fx.disk('root', 1), fx.disk('data', bus='scsi'),
               fx.disk('cd', kind='cdrom', bus='sata'),
               fx.disk('ci'), fx.disk('pvc'), fx.disk('lun', kind='lun'),
               fx.disk('missing')],
        volumes=[
            {'name': 'root', 'dataVolume': {'name': 'node-0-root'}},
            {'name': 'data', 'dataVolume': {'name': 'node-0-data'}},
            {'name': 'cd', 'dataVolume': {'name': 'node-0-iso'}},
            {'name': 'ci', 'cloudInitNoCloud': {'userData': 'x'}},
            {'name': 'pvc', 'persistentVolumeClaim': {'claimName': 'p'}},
            {'name': 'lun', 'persistentVolumeClaim': {'claimName': 'l'}},
            {'name': 'missing', 'dataVolume': {'name': 'nope'}}],
        templates=[
            {'metadata': {'name': 'node-0-root'},
             'spec': {'storage': {'resources': {
                 'requests': {'storage': '40Gi'}}}}},
            {'metadata': {'name': 'node-0-data'},
             'spec': {'pvc': {'resources': {
                 'requests': {'storage': '1G'}}}}}])


def test_simple_storage_from_templates():
    assert inventory.simple_storage(disks.disks(_storage_vm())) == {
        'virtio': {'Id': 'virtio', 'Name': 'virtio', 'DeviceList': [
            {'Name': 'root', 'CapacityBytes': 40 * GI}]},
        'scsi': {'Id': 'scsi', 'Name': 'scsi', 'DeviceList': [
            {'Name': 'data', 'CapacityBytes': 10 ** 9}]}}


def test_simple_storage_with_objects():
    objects = [
        {'kind': 'DataVolume', 'metadata': {'name': 'node-0-iso'},
         'spec': {'storage': {'resources': {
             'requests': {'storage': '1Gi'}}}}},
        {'kind': 'PersistentVolumeClaim', 'metadata': {'name': 'p'},
         'spec': {'resources': {'requests': {'storage': '10Gi'}}},
         'status': {'capacity': {'storage': '12Gi'}}},
        {'kind': 'PersistentVolumeClaim', 'metadata': {'name': 'l'},
         'spec': {'resources': {'requests': {'storage': '5Gi'}}}},
        {'kind': 'DataVolume', 'metadata': {'name': 'node-0-root'},
         'spec': {'storage': {'resources': {
             'requests': {'storage': '50Gi'}}}}},
    ]
    storage = inventory.simple_storage(disks.disks(_storage_vm(), objects))
    assert storage['virtio']['DeviceList'] == [
        {'Name': 'root', 'CapacityBytes': 50 * GI},
        {'Name': 'pvc', 'CapacityBytes': 12 * GI}]
    assert storage['scsi']['DeviceList'] == [
        {'Name': 'data', 'CapacityBytes': 10 ** 9},
        {'Name': 'lun', 'CapacityBytes': 5 * GI}]
    assert 'sata' not in storage, 'optical media are VirtualMedia'


def test_simple_storage_empty():
    assert inventory.simple_storage(disks.disks(fx.vm())) == {}


def test_disks_kinds_sizes_and_unknowns():
    vm = _storage_vm()
    vm['spec']['template']['spec']['domain']['devices']['disks'].append(
        fx.disk('scratch'))
    vm['spec']['template']['spec']['volumes'].append(
        {'name': 'scratch', 'emptyDisk': {'capacity': '2Gi'}})
    vmi = {'status': {'volumeStatus': [
        {'name': 'pvc', 'persistentVolumeClaimInfo': {
            'capacity': {'storage': '3Gi'}}}]}}
    assert disks.disks(vm, vmi=vmi) == [
        disks.Disk('root', 'virtio', 'disk', 40 * GI, 'dataVolume'),
        disks.Disk('data', 'scsi', 'disk', 10 ** 9, 'dataVolume'),
        disks.Disk('cd', 'sata', 'cdrom', None, 'dataVolume'),
        disks.Disk('ci', 'virtio', 'disk', None, 'cloudInitNoCloud'),
        disks.Disk('pvc', 'virtio', 'disk', 3 * GI,
                   'persistentVolumeClaim'),
        disks.Disk('lun', 'scsi', 'lun', None, 'persistentVolumeClaim'),
        disks.Disk('missing', 'virtio', 'disk', None, 'dataVolume'),
        disks.Disk('scratch', 'virtio', 'disk', 2 * GI, 'emptyDisk')]
    assert list(disks.buses(disks.disks(vm))) == ['virtio', 'scsi', 'sata']
