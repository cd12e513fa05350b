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
"""A Manager's NetworkProtocol and EthernetInterfaces: the service's own.

Every Manager is the one emulator: its network protocol is the scheme
(HTTP or HTTPS) and port the request reached, the only ones served; its
one Ethernet interface, ``Service``, has the address the request reached
(the bind address, ``127.0.0.1`` for a local emulator). Nothing is
changed through them (read-only).
"""

import ipaddress

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.redfish import base

MANAGER = '/redfish/v1/Managers/%s'
INTERFACE = 'Service'


def _served():
    """``(scheme, host, port)`` the request reached."""
    environ = flask.request.environ
    scheme = flask.request.scheme
    port = environ.get('SERVER_PORT') or ('443' if scheme == 'https'
                                          else '80')
    return scheme, environ.get('SERVER_NAME') or '', int(port)


def network_protocol(identity, scheme, port):
    """The ManagerNetworkProtocol: ``scheme`` on ``port``, nothing else."""
    return {
        '@odata.type': '#ManagerNetworkProtocol.v1_2_0.'
                       'ManagerNetworkProtocol',
        '@odata.id': MANAGER % identity + '/NetworkProtocol',
        'Id': 'NetworkProtocol',
        'Name': 'Manager Network Protocol',
        'Description': 'The protocol the Redfish service is served on',
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'HTTP': {'ProtocolEnabled': scheme == 'http',
                 'Port': port if scheme == 'http' else None},
        'HTTPS': {'ProtocolEnabled': scheme == 'https',
                  'Port': port if scheme == 'https' else None},
    }


def interfaces(identity):
    path = MANAGER % identity + '/EthernetInterfaces'
    return {
        '@odata.type': '#EthernetInterfaceCollection.'
                       'EthernetInterfaceCollection',
        '@odata.id': path,
        'Name': 'Ethernet Interface Collection',
        'Members@odata.count': 1,
        'Members': [{'@odata.id': '%s/%s' % (path, INTERFACE)}],
    }


def interface(identity, host):
    """The interface the service answers on, with address ``host``."""
    body = {
        '@odata.type': '#EthernetInterface.v1_0_2.EthernetInterface',
        '@odata.id': '%s/EthernetInterfaces/%s' % (MANAGER % identity,
                                                   INTERFACE),
        'Id': INTERFACE,
        'Name': 'Redfish service interface',
        'Description': 'The address the Redfish service answers on',
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'InterfaceEnabled': True,
    }
    try:
        address = ipaddress.ip_address(host.strip('[]'))
    except ValueError:
        body['HostName'] = host
        return body
    if address.version == 4:
        body['IPv4Addresses'] = [{'Address': str(address),
                                  'AddressOrigin': 'Static'}]
    else:
        body['IPv6Addresses'] = [{'Address': str(address),
                                  'AddressOrigin': 'Static'}]
    return body


def _manager(identity):
    app = flask.current_app
    if not base.plugin_driver(app) or app.feature_set == 'minimum':
        raise error.NotFound()
    app.managers.get_manager(identity)


@base.route('/redfish/v1/Managers/<identity>/NetworkProtocol',
            GET=privileges.LOGIN)
def manager_network_protocol(identity):
    _manager(identity)
    scheme, _, port = _served()
    return base.json_response(network_protocol(identity, scheme, port))


@base.route('/redfish/v1/Managers/<identity>/EthernetInterfaces',
            GET=privileges.LOGIN)
def manager_interfaces(identity):
    _manager(identity)
    return base.json_response(interfaces(identity))


@base.route('/redfish/v1/Managers/<identity>/EthernetInterfaces/'
            + INTERFACE, GET=privileges.LOGIN)
def manager_interface(identity):
    _manager(identity)
    return base.json_response(interface(identity, _served()[1]))


@base.editor
def manager_links(body):
    """``NetworkProtocol`` and ``EthernetInterfaces`` in a Manager's body."""
    path = body.get('@odata.id')
    if not path or flask.current_app.feature_set == 'minimum':
        return False
    body['NetworkProtocol'] = {'@odata.id': path + '/NetworkProtocol'}
    body['EthernetInterfaces'] = {'@odata.id': path + '/EthernetInterfaces'}
    return True
