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

from sushy_kubevirt.kubevirt import netadapters


def _vm(interfaces, networks, annotations=None):
    return {'metadata': {'name': 'vm', 'namespace': 'ns',
                         'annotations': annotations or {}},
            'spec': {'template': {'spec': {
                'domain': {'devices': {'interfaces': interfaces}},
                'networks': networks}}}}


IFACES = [{'name': 'default', 'masquerade': {}, 'model': 'e1000',
           'macAddress': '02-AA-BB-CC-DD-EE'},
          {'name': 'data', 'bridge': {}},
          {'name': 'off', 'bridge': {}, 'state': 'down'},
          {'name': 'gone', 'bridge': {}, 'state': 'absent'}]
NETWORKS = [{'name': 'default', 'pod': {}},
            {'name': 'data', 'multus': {'networkName': 'other/fast'}},
            {'name': 'off', 'multus': {'networkName': 'slow'}},
            {'name': 'gone', 'multus': {'networkName': 'slow'}}]


def _running(*interfaces):
    return {'status': {'phase': 'Running', 'interfaces': list(interfaces)}}


def test_ports_of_a_stopped_vm():
    ports = netadapters.ports(_vm(IFACES, NETWORKS))
    assert [(p.id, p.mac, p.network, p.link_up, p.enabled)
            for p in ports] == [
        ('02:aa:bb:cc:dd:ee', '02:aa:bb:cc:dd:ee', 'pod', False, True),
        ('data', None, 'other/fast', False, True),
        ('off', None, 'ns/slow', False, False)]


def test_ports_of_a_running_vm():
    vmi = _running(
        {'name': 'default', 'mac': '02:aa:bb:cc:dd:ee', 'linkState': 'up'},
        {'name': 'data', 'mac': '02:00:00:00:00:01'},
        {'name': 'off', 'mac': '02:00:00:00:00:02', 'linkState': 'down'})
    ports = netadapters.ports(_vm(IFACES, NETWORKS), vmi)
    assert [(p.id, p.link_up) for p in ports] == [
        ('02:aa:bb:cc:dd:ee', True), ('02:00:00:00:00:01', True),
        ('02:00:00:00:00:02', False)]


def test_an_ended_vmi_tells_nothing():
    vmi = _running({'name': 'data', 'mac': '02:00:00:00:00:01'})
    vmi['status']['phase'] = 'Succeeded'
    ports = netadapters.ports(_vm(IFACES, NETWORKS), vmi)
    assert ports[1].id == 'data' and not ports[1].link_up


def test_an_interface_without_a_known_network():
    ports = netadapters.ports(_vm([{'name': 'x', 'bridge': {}}], []))
    assert ports[0].network is None


def test_adapter_model_and_firmware():
    vm = _vm(IFACES, NETWORKS)
    adapter = netadapters.adapter(vm)
    assert (adapter.model, adapter.firmware) == ('e1000', '1.0.0')
    vm = _vm([{'name': 'a'}], [], {
        'sushy-kubevirt.io/nic-firmware-version': '7.1'})
    adapter = netadapters.adapter(vm)
    assert (adapter.model, adapter.firmware) == ('virtio', '7.1')


def test_lldp_port_id():
    assert netadapters.lldp_port_id('eth0') == '65:74:68:30'
