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

"""The Redfish service documents: ``/redfish``, ``$metadata``, ``odata``.

DSP0266 lets anyone read them; they describe a plugin driver's answers
(other drivers keep sushy-tools' 404). ``$metadata`` is a CSDL document of our
own that references the DMTF schema of every namespace our answers'
``@odata.type`` names (:data:`NAMESPACES`) and declares the ``Service``
EntityContainer; the OData service document lists the service root's
top-level resources. :func:`segment` percent-encodes a name that becomes
one segment of an ``@odata.id``.
"""

import itertools
import urllib.parse
from xml.sax import saxutils

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import responses

SCHEMAS = responses.SCHEMAS
METADATA = responses.METADATA
ROOT = '/redfish/v1/'
#: The service root's namespace: the EntityContainer extends it.
SERVICE_ROOT = 'ServiceRoot.v1_17_0'
#: Every DMTF namespace an ``@odata.type`` of a plugin driver names.
NAMESPACES = (
    'AccountService.v1_5_0', 'AttributeRegistry.v1_3_0', 'Bios.v1_1_0',
    'CertificateCollection', 'CertificateLocations.v1_0_2',
    'CertificateService.v1_0_4',
    'Chassis.v1_7_0', 'ChassisCollection', 'ComputerSystem.v1_13_0',
    'ComputerSystemCollection', 'Drive.v1_9_0',
    'EthernetInterface.v1_0_2', 'EthernetInterfaceCollection',
    'EventDestination.v1_9_0', 'EventDestinationCollection',
    'EventService.v1_10_0', 'LogEntry.v1_4_0', 'LogEntryCollection',
    'LogService.v1_1_3', 'LogServiceCollection', 'Manager.v1_3_1',
    'ManagerAccount.v1_7_0',
    'ManagerAccountCollection', 'ManagerCollection',
    'ManagerNetworkProtocol.v1_2_0', 'Memory.v1_10_0',
    'MemoryCollection', 'Message.v1_1_1', 'MessageRegistry.v1_1_1',
    'MessageRegistryFile.v1_1_0', 'MessageRegistryFile.v1_1_1',
    'MessageRegistryFileCollection', 'NetworkAdapter.v1_5_0',
    'NetworkAdapterCollection', 'Port.v1_8_0', 'PortCollection',
    'Processor.v1_0_7',
    'ProcessorCollection', 'Resource', 'Role.v1_3_1', 'RoleCollection',
    'SecureBoot.v1_1_0', SERVICE_ROOT, 'Session.v1_4_0',
    'SessionCollection', 'SessionService.v1_1_8', 'Settings.v1_3_5',
    'SimpleStorage.v1_1_0', 'SimpleStorage.v1_2_0',
    'SimpleStorageCollection', 'SoftwareInventory.v1_3_0',
    'SoftwareInventoryCollection', 'Storage.v1_9_0', 'StorageCollection',
    'Task.v1_4_3', 'TaskCollection', 'TaskService.v1_2_0',
    'Thermal.v1_3_0', 'UpdateService.v1_11_0', 'VirtualMedia.v1_4_0',
    'VirtualMediaCollection', 'Volume.v1_5_0', 'VolumeCollection')


#: What RFC 3986 allows unencoded in a path segment besides unreserved
#: characters (``pchar``); ``/`` is not among them.
_PCHAR = ":@!$&'()*+,;="


def segment(name):
    """``name`` percent-encoded as one URI path segment (RFC 3986)."""
    return urllib.parse.quote(str(name), safe=_PCHAR)


def schema_file(namespace):
    """The DMTF CSDL file that defines ``namespace``."""
    return '%s%s_v1.xml' % (SCHEMAS, namespace.partition('.')[0])


def _metadata():
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/'
             'edmx" Version="4.0">']
    for uri, group in itertools.groupby(sorted(NAMESPACES, key=schema_file),
                                        schema_file):
        group = set(group)
        names = sorted(group | {n.partition('.')[0] for n in group})
        lines.append('  <edmx:Reference Uri=%s>' % saxutils.quoteattr(uri))
        lines += ['    <edmx:Include Namespace=%s/>' % saxutils.quoteattr(n)
                  for n in names]
        lines.append('  </edmx:Reference>')
    lines += ['  <edmx:DataServices>',
              '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" '
              'Namespace="Service">',
              '      <EntityContainer Name="Service" Extends="%s.'
              'ServiceContainer"/>' % SERVICE_ROOT,
              '    </Schema>', '  </edmx:DataServices>', '</edmx:Edmx>', '']
    return '\n'.join(lines)


#: The ``$metadata`` document (it does not change while the service runs).
METADATA_XML = _metadata()


def _plugin_only():
    if not base.plugin_driver(flask.current_app):
        raise error.NotFound()


@base.route('/redfish', GET=privileges.NO_AUTH)
def versions():
    """The protocol versions and their roots (DSP0266 "/redfish")."""
    _plugin_only()
    return base.json_response({'v1': ROOT})


@base.route(METADATA, GET=privileges.NO_AUTH)
def metadata():
    """The CSDL ``$metadata`` document."""
    _plugin_only()
    return flask.Response(METADATA_XML, content_type='application/xml')


@base.route('/redfish/v1/odata', GET=privileges.NO_AUTH)
def service_document():
    """The OData service document: the service root's top resources."""
    _plugin_only()
    # The root as a client reads it, once every hook has edited it.
    root = flask.current_app.test_client().get(ROOT).get_json(silent=True)
    value = [{'name': 'Service', 'kind': 'Singleton', 'url': ROOT}]
    for name, item in sorted((root or {}).items()):
        if isinstance(item, dict) and set(item) == {'@odata.id'}:
            value.append({'name': name, 'kind': 'Singleton',
                          'url': item['@odata.id']})
    return base.json_response({'@odata.context': METADATA, 'value': value})
