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

"""The KubeVirt drivers under sushy-tools' reduced feature sets.

``SUSHY_EMULATOR_FEATURE_SET = 'vmedia'`` is what Ironic's virtual-media
CI job runs, ``'minimum'`` the smallest set. The routes Ironic uses and
the set allows work with the KubeVirt drivers (list, get by name and
UUID, power, boot device once and persistent, and virtual media where
the set links it); the routes the set removes answer 404 and are not
linked from the System.
"""

import pytest
import requests
import sushy
from tests.functional.conformance import test_ironic_flows as flows
from tests.functional.conformance import test_ironic_vmedia as vmedia
from tests.functional.emulator import harness
from tests.functional.vmedia.conftest import images  # noqa: F401

ON, OFF = flows.ON, flows.OFF


@pytest.fixture(scope='module', params=['vmedia', 'minimum'])
def feature_set(request, sim, tmp_path_factory):
    """(name, in-process emulator) for each feature set in turn."""
    tmp = tmp_path_factory.mktemp('feature-' + request.param)
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kubeconfig')),
        SUSHY_EMULATOR_FEATURE_SET=request.param,
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT=2)
    with harness.InProcess(config) as server:
        yield request.param, server


def test_ironic_routes(feature_set, machine, sim):
    name, server = feature_set
    ironic = sushy.Sushy(server.url + '/redfish/v1/',
                         auth=harness.NoAuth(), server_side_retries=0)
    assert machine.path in ironic.get_system_collection().members_identities
    system = ironic.get_system(flows._path(machine))   # 307 to the UUID
    assert (system.identity, system.name) == (machine.uuid, machine.name)
    assert system.power_state == OFF

    flows.set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_PXE,
                          True)
    assert flows._boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_PXE,
                                            flows.CONTINUOUS)
    flows.set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_HDD,
                          False)
    assert flows._boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_HDD,
                                            flows.ONCE)
    flows.set_power(ironic, machine, sushy.RESET_ON, ON)
    harness.wait_until(lambda: flows._boot(ironic, machine) == (
        sushy.BOOT_SOURCE_TARGET_PXE, flows.DISABLED), 20, 0.1,
        'one-time boot consumed')
    flows.set_power(ironic, machine, sushy.RESET_FORCE_OFF, OFF)

    body = requests.get(server.url + machine.path, timeout=30).json()
    removed = ['/Processors', '/BIOS', '/SimpleStorage']
    if name == 'minimum':
        assert 'VirtualMedia' not in body and 'EthernetInterfaces' not in \
            body
        removed += ['/EthernetInterfaces']
    else:
        nics = ironic.get_system(flows._path(machine)).ethernet_interfaces
        assert len(nics.summary) == 1
    for path in removed:
        answer = requests.get(server.url + machine.path + path, timeout=30)
        assert answer.status_code == 404, (path, answer.text)


def test_virtual_media(feature_set, machine, sim, images):  # noqa: F811
    name, server = feature_set
    if name == 'minimum':
        pytest.skip('the minimum set links no VirtualMedia')
    ironic = sushy.Sushy(server.url + '/redfish/v1/',
                         auth=harness.NoAuth(), server_side_retries=0)
    path = flows._path(machine)
    url = images.add('feature-%s.iso' % machine.name)
    vmedia.insert_vmedia(ironic, path, url)
    flows.set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_CD,
                          False)
    harness.wait_until(
        lambda: vmedia.cd_members(ironic.get_system(path))[0].inserted,
        20, 0.1, 'Inserted')
    vmedia.power_on(ironic, path)
    harness.wait_until(
        lambda: ironic.get_system(path).power_state == ON, 20, 0.1, 'On')
    assert vmedia.eject_vmedia(ironic, path) is True
    assert vmedia.CDROM not in vmedia._spec_disks(sim, machine)
    flows.set_power(ironic, machine, sushy.RESET_FORCE_OFF, OFF)
