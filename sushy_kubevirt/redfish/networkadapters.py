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

"""A Chassis' NetworkAdapters and their Ports: the VMs' interfaces.

A Chassis is a namespace (:mod:`.chassis`); each System in it reached by
the request has one NetworkAdapter there, whose Id is the System's id,
so a client that follows a System's ``Links.Chassis`` finds its adapter
by that id. Its one controller carries the firmware version
(``FirmwarePackageVersion``) and links the ports: one per interface of
the VM (:mod:`sushy_kubevirt.kubevirt.netadapters`), with its MAC, link,
and in ``Ethernet.LLDPReceive`` its network as the chassis and its
interface as the port. Everything is read from the watch cache.
"""

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.kubevirt import netadapters
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import chassis
from sushy_kubevirt.redfish import odata

_CHASSIS = '/redfish/v1/Chassis/%s'
_OK = {'State': 'Enabled', 'Health': 'OK'}
_METHOD = 'get_network_adapter'


def collection_path(chassis_id):
    return _CHASSIS % odata.segment(chassis_id) + '/NetworkAdapters'


def _adapter_path(chassis_id, system_id):
    return '%s/%s' % (collection_path(chassis_id), odata.segment(system_id))


def _port_path(chassis_id, system_id, port_id):
    return '%s/Ports/%s' % (_adapter_path(chassis_id, system_id),
                            odata.segment(port_id))


def collection(chassis_id, system_ids):
    """The NetworkAdapterCollection of a Chassis holding ``system_ids``."""
    path = collection_path(chassis_id)
    return {
        '@odata.type': '#NetworkAdapterCollection.NetworkAdapterCollection',
        '@odata.id': path,
        'Name': 'Network Adapter Collection',
        'Members@odata.count': len(system_ids),
        'Members': [{'@odata.id': _adapter_path(chassis_id, system_id)}
                    for system_id in system_ids],
    }


def adapter(chassis_id, system_id, name, facts):
    """The NetworkAdapter of System ``system_id`` (VM ``name``)."""
    path = _adapter_path(chassis_id, system_id)
    return {
        '@odata.type': '#NetworkAdapter.v1_5_0.NetworkAdapter',
        '@odata.id': path,
        'Id': system_id,
        'Name': 'Network adapter of %s' % name,
        'Description': 'The network interfaces of VirtualMachine %s' % name,
        'Manufacturer': 'KubeVirt',
        'Model': facts.model,
        'Status': dict(_OK),
        'Controllers': [{
            'FirmwarePackageVersion': facts.firmware,
            'ControllerCapabilities': {
                'NetworkPortCount': len(facts.ports)},
            'Links': {'Ports': [
                {'@odata.id': _port_path(chassis_id, system_id, item.id)}
                for item in facts.ports]},
        }],
        'Ports': {'@odata.id': path + '/Ports'},
    }


def ports(chassis_id, system_id, facts):
    """The PortCollection of an adapter."""
    members = [{'@odata.id': _port_path(chassis_id, system_id, item.id)}
               for item in facts.ports]
    return {
        '@odata.type': '#PortCollection.PortCollection',
        '@odata.id': _adapter_path(chassis_id, system_id) + '/Ports',
        'Name': 'Port Collection',
        'Members@odata.count': len(members),
        'Members': members,
    }


def port(chassis_id, system_id, port_):
    """The Port of one interface (:class:`.netadapters.Port`)."""
    ethernet = {'LLDPEnabled': port_.network is not None}
    if port_.mac:
        ethernet['AssociatedMACAddresses'] = [port_.mac]
    if port_.network is not None:
        ethernet['LLDPReceive'] = {
            'ChassisId': port_.network,
            'ChassisIdSubtype': 'LocalAssign',
            'PortId': netadapters.lldp_port_id(port_.name),
            'PortIdSubtype': 'IfName',
            'SystemName': port_.network,
        }
    return {
        '@odata.type': '#Port.v1_8_0.Port',
        '@odata.id': _port_path(chassis_id, system_id, port_.id),
        'Id': port_.id,
        'Name': port_.name,
        'Description': 'Interface %s' % port_.name,
        'PortId': port_.name,
        'PortProtocol': 'Ethernet',
        'PortType': 'BidirectionalPort',
        'LinkState': 'Enabled' if port_.enabled else 'Disabled',
        'LinkStatus': 'LinkUp' if port_.link_up else 'LinkDown',
        'Status': dict(_OK) if port_.enabled else {
            'State': 'Disabled', 'Health': 'OK'},
        'Ethernet': ethernet,
    }


def _chassis(identity):
    """The namespace Chassis driver, with ``identity`` checked (404)."""
    app = flask.current_app
    namespaces = chassis.namespace_chassis(app)
    if namespaces is None or base.systems_driver(app, _METHOD) is None:
        raise error.NotFound()
    namespaces.namespace(identity)
    return namespaces


def _facts(identity, adapter_id):
    """``(vm name, Adapter)`` of System ``adapter_id`` in this Chassis."""
    namespaces = _chassis(identity)
    systems = flask.current_app.systems
    try:
        inside = namespaces.of_system(adapter_id) == identity
        facts = systems.get_network_adapter(adapter_id)
    except error.AliasAccessError:
        inside = False   # an adapter is named by its System's id only
    if not inside:
        raise error.NotFound()
    return systems.name(adapter_id), facts


@base.route('/redfish/v1/Chassis/<identity>/NetworkAdapters',
            GET=privileges.LOGIN)
def adapter_collection(identity):
    return base.json_response(collection(identity, _chassis(
        identity).systems(identity)))


@base.route('/redfish/v1/Chassis/<identity>/NetworkAdapters/<adapter_id>',
            GET=privileges.LOGIN)
def adapter_resource(identity, adapter_id):
    name, facts = _facts(identity, adapter_id)
    return base.json_response(adapter(identity, adapter_id, name, facts))


@base.route('/redfish/v1/Chassis/<identity>/NetworkAdapters/<adapter_id>'
            '/Ports', GET=privileges.LOGIN)
def port_collection(identity, adapter_id):
    facts = _facts(identity, adapter_id)[1]
    return base.json_response(ports(identity, adapter_id, facts))


@base.route('/redfish/v1/Chassis/<identity>/NetworkAdapters/<adapter_id>'
            '/Ports/<port_id>', GET=privileges.LOGIN)
def port_resource(identity, adapter_id, port_id):
    facts = _facts(identity, adapter_id)[1]
    for port_ in facts.ports:
        if port_.id == port_id:
            return base.json_response(port(identity, adapter_id, port_))
    raise error.NotFound()
