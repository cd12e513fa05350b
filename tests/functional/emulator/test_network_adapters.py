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

"""A Chassis' NetworkAdapters and Ports, read as Ironic's inspection does.

Ironic follows the System's ``Links.Chassis``, then every adapter and
port of that Chassis (``_collect_lldp_data``: the LLDP data of each port
by its Id) and every controller's ``FirmwarePackageVersion`` (its NIC
firmware components).
"""

import requests
import sushy
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import objects

NAME = 'nics'
MAC = '02:00:00:0a:0b:0c'


def _create_two_nic_vm(sim):
    vm = objects.make_vm(NAME, mac=MAC)
    spec = vm['spec']['template']['spec']
    spec['domain']['devices']['interfaces'].append(
        {'name': 'storage', 'bridge': {}, 'state': 'down'})
    spec['networks'].append(
        {'name': 'storage', 'multus': {'networkName': 'storage-net'}})
    vm['metadata']['annotations'] = {
        'sushy-kubevirt.io/nic-firmware-version': '2.3.4'}
    status, body = backend.admin_request(
        sim, 'POST', '/apis/kubevirt.io/v1/namespaces/default/'
        'virtualmachines', vm)
    assert status == 201, body
    return identity.firmware_uuid(body)


def _lldp(port):
    lldp = port.ethernet.lldp_receive
    return lldp.chassis_id, lldp.port_id, lldp.system_name


def test_ironic_finds_each_systems_ports_and_lldp(sim, emulator, redfish,
                                                  machine):
    system_id = _create_two_nic_vm(sim)
    system = harness.wait_until(
        lambda: _get(redfish, system_id), what='the new System')
    chassis = system.chassis
    assert len(chassis) == 1, 'the namespace holds it'
    adapters = {a.identity: a for a in
                chassis[0].network_adapters.get_members()}
    assert {system_id, machine.uuid} <= set(adapters), \
        'one adapter per System, named by its id'

    adapter = adapters[system_id]
    assert adapter.manufacturer == 'KubeVirt'
    assert [c.firmware_package_version for c in adapter.controllers] == [
        '2.3.4']
    assert adapters[machine.uuid].controllers[0].firmware_package_version \
        == '1.0.0', 'the default'

    ports = {p.identity: p for p in adapter.ports.get_members()}
    assert set(ports) == {MAC, 'storage'}, \
        "a port's Id is its MAC (the System's EthernetInterface), else name"
    default, storage = ports[MAC], ports['storage']
    assert _lldp(default) == ('pod', '64:65:66:61:75:6C:74', 'pod')
    assert _lldp(storage) == ('default/storage-net',
                              '73:74:6F:72:61:67:65', 'default/storage-net')
    assert default.ethernet.associated_mac_addresses == [MAC]
    assert default.link_status == sushy.PortLinkStatus.LINKDOWN, 'VM off'
    assert storage.json['LinkState'] == 'Disabled'
    interfaces = system.ethernet_interfaces.summary
    assert MAC in interfaces, 'LLDP keyed as the interface Ironic inspects'


def test_links_follow_the_running_guest(sim, emulator, redfish):
    system = redfish.get_system('/redfish/v1/Systems/' + harness.wait_until(
        lambda: identity.firmware_uuid(harness.vm(sim, NAME) or {})))
    system.reset_system(sushy.RESET_ON)

    def links():
        adapter = system.chassis[0].network_adapters.get_member(
            system.chassis[0].network_adapters.path + '/' + system.identity)
        return {p.name: (p.identity, p.link_status)
                for p in adapter.ports.get_members()}
    up = (MAC, sushy.PortLinkStatus.LINKUP)
    harness.wait_until(lambda: links()['default'] == up, what='link up')
    storage = links()['storage']
    assert storage[1] == sushy.PortLinkStatus.LINKDOWN, 'set down'
    reported = [i['mac'] for i in harness.vmi(sim, NAME)['status'][
        'interfaces'] if i['name'] == 'storage']
    assert storage[0] == reported[0], 'now it has a MAC: its Id'
    system.reset_system(sushy.RESET_FORCE_OFF)


def test_a_warm_get_makes_no_api_call(sim, emulator, machine):
    chassis = requests.get(emulator.url + machine.path).json()['Links'][
        'Chassis'][0]['@odata.id']
    collection = emulator.url + chassis + '/NetworkAdapters'
    adapter = collection + '/' + machine.uuid
    ports = requests.get(adapter + '/Ports').json()['Members']
    urls = [collection, adapter, adapter + '/Ports',
            emulator.url + ports[0]['@odata.id']]
    for url in urls:
        assert requests.get(url).status_code == 200, url
    backend.log_complete(sim)
    sim.request_log.clear()
    for url in urls:
        assert requests.get(url).status_code == 200, url
    backend.log_complete(sim)
    assert [e for e in harness.api_calls(sim)
            if e.get('path') != '/version'] == []


def test_only_the_chassis_of_the_system_names_its_adapter(emulator,
                                                          machine):
    collection = requests.get(emulator.url + '/redfish/v1/Chassis').json()
    chassis = requests.get(emulator.url + machine.path).json()['Links'][
        'Chassis'][0]['@odata.id']
    others = [m['@odata.id'] for m in collection['Members']
              if m['@odata.id'] != chassis]
    for path in others:
        response = requests.get('%s%s/NetworkAdapters/%s' % (
            emulator.url, path, machine.uuid))
        assert response.status_code == 404, path
    for missing in ('no-such-system', machine.name):
        response = requests.get('%s%s/NetworkAdapters/%s' % (
            emulator.url, chassis, missing))
        assert response.status_code == 404, missing
    response = requests.get('%s%s/NetworkAdapters/%s/Ports/nope' % (
        emulator.url, chassis, machine.uuid))
    assert response.status_code == 404


def _get(redfish, system_id):
    try:
        return redfish.get_system('/redfish/v1/Systems/' + system_id)
    except sushy.exceptions.ResourceNotFoundError:
        return None
