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

"""A stopped VM's PVC disk is sized from its claim, at no API call.

The VMs are seeded with ``pvc_roots``: a root disk on a
``persistentVolumeClaim`` volume of the 10Gi PVC ``<vm>-root``, no
DataVolume. Their sizes are read as Ironic's redfish inspection reads
them (sushy's SimpleStorage and Storage sizes) over real HTTP.
"""

from kubernetes import client
from kubernetes import config as kube_config
import pytest
import requests
import sushy
from tests import backend
from tests.functional.emulator import harness

GIB = 1024 ** 3


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=3, pvc_roots=True)
    try:
        yield simulator
    finally:
        simulator.stop()


def _sizes(system):
    """SimpleStorage, Storage Volume and Drive sizes, as Ironic reads them."""
    system.refresh()
    system.simple_storage.refresh()
    system.storage.refresh()
    return (system.simple_storage.disks_sizes_bytes,
            system.storage.volumes_sizes_bytes,
            system.storage.drives_sizes_bytes)


def _local_gb(sizes):
    """Ironic's ``local_gb``: the smallest disk of 4 GiB or more, less 1."""
    found = [min([s for s in each if s >= 4 * GIB] or [0]) for each in sizes]
    return max(0, int(min(s for s in found if s) / GIB - 1))


def test_a_stopped_vms_pvc_disk_has_the_claims_size(emulator, redfish,
                                                    machine):
    system = redfish.get_system(machine.path)
    assert system.power_state == sushy.SYSTEM_POWER_STATE_OFF
    assert _sizes(system) == ([10 * GIB], [10 * GIB], [10 * GIB])
    assert _local_gb(_sizes(system)) == 9
    drive = requests.get(emulator.url + machine.path +
                         '/Storage/virtio/Drives/root', timeout=30).json()
    assert drive['CapacityBytes'] == 10 * GIB
    assert 'Description' not in drive, 'no "Capacity unknown" note'


def test_warm_reads_make_no_api_call(sim, emulator, machine):
    url = emulator.url + machine.path
    harness.wait_caught_up(sim, url, machine.name)
    paths = [url, url + '/SimpleStorage', url + '/SimpleStorage/virtio',
             url + '/Storage/virtio', url + '/Storage/virtio/Drives/root',
             url + '/Storage/virtio/Volumes/root']
    for path in paths:   # warm: each read once
        assert requests.get(path, timeout=30).status_code == 200, path
    backend.log_complete(sim)
    sim.request_log.clear()
    for path in paths * 3:
        assert requests.get(path, timeout=30).status_code == 200, path
    backend.log_complete(sim)
    assert [e for e in harness.api_calls(sim)
            if e.get('path') != '/version'] == []


def test_a_resize_of_the_claim_shows_up(sim, emulator, redfish, machine,
                                        tmp_path):
    url = emulator.url + machine.path
    before = harness.wait_caught_up(sim, url, machine.name)
    api = kube_config.new_client_from_config(
        config_file=backend.write_admin_kubeconfig(
            sim, str(tmp_path / 'kubeconfig')))
    # What the volume resizer writes once the volume has grown.
    client.CoreV1Api(api).patch_namespaced_persistent_volume_claim_status(
        machine.name + '-root', 'default',
        {'status': {'capacity': {'storage': '12Gi'}}})
    after = harness.wait_caught_up(sim, url, machine.name)
    assert after.headers['ETag'] != before.headers['ETag']
    system = redfish.get_system(machine.path)
    assert _sizes(system) == ([12 * GIB], [12 * GIB], [12 * GIB])
    assert _local_gb(_sizes(system)) == 11
