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

"""A VM's network adapter: its interfaces as ports, with LLDP facts.

Each VM has one NetworkAdapter whose ports are the template's interfaces
(``spec.template.spec.domain.devices.interfaces``, an interface whose
``state`` is ``absent`` left out), each joined by name to its network
(``spec.template.spec.networks``):

* the port's MAC is the template's ``macAddress``, else the one the
  running VMI reports (``status.interfaces``); its Id is that MAC (lower
  case, as the System's EthernetInterface of the same NIC), else the
  interface name;
* its link is up while the VMI runs and reports the interface with
  ``linkState`` ``up`` (an interface reported without one is up unless
  the template sets ``state: down``), down otherwise; it is disabled when
  the template sets ``state: down``;
* what LLDP would tell from the other end: the network is the "switch"
  (its chassis: the Multus network as ``<namespace>/<name>``, ``pod`` for
  the pod network) and the interface its port (LLDP ``IfName``, sent as
  the name's octets).

The adapter's firmware version is the VM's annotation
:data:`FIRMWARE_ANNOTATION`, else :data:`DEFAULT_FIRMWARE`; its model
the interfaces' ``model`` (``virtio``, KubeVirt's default).
"""

import dataclasses

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import inventory

DEFAULT_FIRMWARE = '1.0.0'
FIRMWARE_ANNOTATION = 'sushy-kubevirt.io/nic-firmware-version'
DEFAULT_MODEL = 'virtio'
POD_NETWORK = 'pod'
_NETWORKS = ('spec', 'template', 'spec', 'networks')


@dataclasses.dataclass(frozen=True)
class Port:
    """One interface of a VM."""

    #: Redfish Id: the MAC, else the interface name.
    id: str
    #: The interface name (``interfaces[].name``).
    name: str
    #: Lower-case MAC with colons, or None while unknown.
    mac: str
    #: True while the running guest's link is up.
    link_up: bool
    #: False when the template sets ``state: down``.
    enabled: bool
    #: The network: ``<namespace>/<name>`` (Multus) or ``pod``.
    network: str


@dataclasses.dataclass(frozen=True)
class Adapter:
    """A VM's network adapter."""

    model: str
    firmware: str
    ports: tuple


def _network(vm, name):
    """The network ``name`` of ``vm``'s template, as the LLDP chassis."""
    namespace = fields.get(vm, 'metadata', 'namespace')
    for network in fields.get(vm, *_NETWORKS, default=[]):
        if network.get('name') != name:
            continue
        multus = fields.get(network, 'multus', 'networkName')
        if multus:
            return multus if '/' in multus else '%s/%s' % (namespace, multus)
        return POD_NETWORK if 'pod' in network else None
    return None


def _link_up(iface, reported):
    if reported is None:
        return False
    state = reported.get('linkState') or iface.get('state') or 'up'
    return state == 'up'


def ports(vm, vmi=None):
    """The :class:`Port` of each interface of ``vm``, in template order.

    :param vmi: the VM's VMI, or None; only a running one tells MACs and
        links.
    """
    running = fields.get(vmi, 'status', 'phase') == 'Running'
    reported = {i.get('name'): i for i in fields.get(
        vmi, 'status', 'interfaces', default=[])} if running else {}
    result = []
    for iface in fields.interfaces(vm):
        name = iface.get('name')
        if not name or iface.get('state') == 'absent':
            continue
        status = reported.get(name)
        mac = inventory.mac(iface.get('macAddress')
                            or (status or {}).get('mac'))
        result.append(Port(
            id=mac or name, name=name, mac=mac,
            link_up=_link_up(iface, status),
            enabled=iface.get('state') != 'down',
            network=_network(vm, name)))
    return result


def adapter(vm, vmi=None):
    """The :class:`Adapter` of ``vm``."""
    models = [iface.get('model') for iface in fields.interfaces(vm)
              if iface.get('model')]
    firmware = fields.annotation(vm, FIRMWARE_ANNOTATION) or DEFAULT_FIRMWARE
    return Adapter(model=models[0] if models else DEFAULT_MODEL,
                   firmware=firmware, ports=tuple(ports(vm, vmi)))


def lldp_port_id(name):
    """An LLDP port id: ``name``'s octets, upper-case hex with colons."""
    return ':'.join('%02X' % octet for octet in name.encode()[:64])
