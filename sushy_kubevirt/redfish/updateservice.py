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
"""The UpdateService: SimpleUpdate of a System's BIOS or its Manager.

``SimpleUpdate`` takes ``ImageURI`` (http or https), optional
``TransferProtocol`` (``HTTP`` or ``HTTPS``), ``Username`` and
``Password`` (together; never stored or shown) and ``Targets``: one of

* ``/redfish/v1/Systems/{id}``: the System, which the image names, as a
  real firmware package does (:func:`~sushy_kubevirt.kubevirt.
  firmwareupdate.component_of`: its BMC when the image file name holds
  ``bmc``, else its BIOS); Ironic sends its node's System, whatever the
  component;
* ``/redfish/v1/Systems/{id}/Bios``: the System's BIOS;
* ``/redfish/v1/Managers/{id}``: its Manager (the BMC);
* a FirmwareInventory member, ``{id}-BIOS`` or ``{id}-BMC``.

Without ``Targets`` (or with an empty list) the only System the account
reaches is meant (a 400 when it reaches several). Bad input is a 400
and records nothing; else the answer is a 202 with the Task
(:mod:`.tasks`) and its monitor in ``Location``. The FirmwareInventory
lists a BIOS and a BMC member per System, their ``Version`` the
System's ``BiosVersion`` and the Manager's
``FirmwareVersion`` (:mod:`sushy_kubevirt.kubevirt.firmwareupdate`).
Like the BIOS, it is offered in the full feature set only (404 else).
"""

import re

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.drivers import context
from sushy_kubevirt.kubevirt import firmwareupdate
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import permissions
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import tasks

SERVICE = '/redfish/v1/UpdateService'
INVENTORY = SERVICE + '/FirmwareInventory'
ACTION = 'UpdateService.SimpleUpdate'
TARGET = SERVICE + '/Actions/' + ACTION
PROTOCOLS = ('HTTP', 'HTTPS')
_PARAMETERS = ('ImageURI', 'TransferProtocol', 'Targets', 'Username',
               'Password')
#: The systems driver method this needs.
_METHOD = 'firmware_updates'
_COMPONENTS = (firmwareupdate.BIOS, firmwareupdate.BMC)
_TARGETS = (
    (re.compile(r'/redfish/v1/Systems/([^/]+)/?'),
     lambda m: (m.group(1), None)),
    (re.compile(r'/redfish/v1/Systems/([^/]+)/Bios/?'),
     lambda m: (m.group(1), firmwareupdate.BIOS)),
    (re.compile(r'/redfish/v1/Managers/([^/]+)/?'),
     lambda m: (m.group(1), firmwareupdate.BMC)),
    (re.compile(re.escape(INVENTORY) + r'/(.+)-(BIOS|BMC)/?'),
     lambda m: (m.group(1), m.group(2))),
)


def service_body():
    return {
        '@odata.type': '#UpdateService.v1_11_0.UpdateService',
        '@odata.id': SERVICE,
        'Id': 'UpdateService',
        'Name': 'Update Service',
        'Description': "Updates a System's BIOS or its Manager's firmware",
        'ServiceEnabled': True,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'FirmwareInventory': {'@odata.id': INVENTORY},
        'Actions': {'#' + ACTION: {
            'target': TARGET,
            'TransferProtocol@Redfish.AllowableValues': list(PROTOCOLS)}},
    }


def member_id(system_id, component):
    return '%s-%s' % (system_id, component)


def inventory_body(system_id, component, name, version):
    related = ('/redfish/v1/Systems/%s/Bios' if component == firmwareupdate
               .BIOS else '/redfish/v1/Managers/%s') % system_id
    return {
        '@odata.type': '#SoftwareInventory.v1_3_0.SoftwareInventory',
        '@odata.id': '%s/%s' % (INVENTORY, member_id(system_id, component)),
        'Id': member_id(system_id, component),
        'Name': '%s of %s' % (component, name),
        'SoftwareId': component,
        'Version': version,
        'Updateable': True,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'RelatedItem': [{'@odata.id': related}],
    }


def offered(app):
    """True when ``app`` serves the UpdateService (full feature set)."""
    return base.systems_driver(app, _METHOD) is not None and \
        app.feature_set == 'full'


def _updates():
    app = flask.current_app
    systems = base.systems_driver(app, _METHOD)
    if systems is None:
        raise error.NotFound()
    if app.feature_set != 'full':
        raise error.FeatureNotAvailable('UpdateService')
    return systems


def _parameter_error(message_id, name, value, detail):
    args = {'ActionParameterMissing': (ACTION, name),
            'ActionParameterUnknown': (ACTION, name),
            'ActionParameterValueConflict': (name, value),
            'ArraySizeTooLong': (name, 1)}.get(
        message_id, (value, name, ACTION))
    return messages.RedfishError(message_id, *args, detail=detail,
                                 properties=['/' + name])


def _string(body, name):
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise _parameter_error(
            'ActionParameterValueTypeError', name, imageurl.shown(value),
            '%s must be a string' % name)
    return value


def _credentials(body, url):
    username, password = _string(body, 'Username'), \
        _string(body, 'Password')
    if bool(username) != bool(password):
        name = 'Password' if username else 'Username'
        raise _parameter_error(
            'ActionParameterMissing', name, None,
            'Username and Password must be given together')
    if username:
        return username, password
    return (url.username, url.password) if url.username else None


def _target(systems, body, url):
    """``(vm, component)`` of the update's target (image ``url``)."""
    targets = body.get('Targets')
    if targets is None or targets == []:
        placed = systems.placed()
        if len(placed) != 1:
            raise _parameter_error(
                'ActionParameterMissing', 'Targets', None,
                'Targets must name the System (or its Manager) to update: '
                'this service has %d Systems' % len(placed))
        targets = ['/redfish/v1/Systems/%s' % placed[0][1]]
    if not isinstance(targets, list) or not all(
            isinstance(t, str) for t in targets):
        raise _parameter_error(
            'ActionParameterValueTypeError', 'Targets',
            imageurl.shown(targets), 'Targets must be a list of URIs')
    if len(targets) != 1:
        raise _parameter_error(
            'ArraySizeTooLong', 'Targets', None,
            'Targets must name exactly one System, Bios, Manager or '
            'FirmwareInventory member')
    target = targets[0]
    for pattern, parts in _TARGETS:
        found = pattern.fullmatch(target)
        if found:
            system, component = parts(found)
            try:
                return _find(systems, system), \
                    component or firmwareupdate.component_of(url.url)
            except error.NotFound:
                break
    raise _parameter_error(
        'ActionParameterValueNotInList', 'Targets', imageurl.shown(target),
        'Target %s is not a System, Bios, Manager or FirmwareInventory '
        'member of this service' % imageurl.shown(target))


def _find(systems, ident):
    try:
        return systems.find_vm(ident)
    except error.AliasAccessError as exc:
        return systems.find_vm(exc.args[0])


def check_body(body):
    """The checked image URL of a SimpleUpdate body (else a 400)."""
    extra = sorted(set(body) - set(_PARAMETERS))
    if extra:
        raise _parameter_error('ActionParameterUnknown', extra[0], None,
                               '%s takes only %s' % (ACTION,
                                                     ', '.join(_PARAMETERS)))
    if 'ImageURI' not in body:
        raise _parameter_error('ActionParameterMissing', 'ImageURI', None,
                               '%s needs ImageURI' % ACTION)
    protocol = body.get('TransferProtocol')
    if protocol is not None and protocol not in PROTOCOLS:
        raise _parameter_error(
            'ActionParameterValueNotInList', 'TransferProtocol',
            imageurl.shown(protocol),
            'TransferProtocol must be one of: %s' % ', '.join(PROTOCOLS))
    try:
        return imageurl.parse(body['ImageURI'], 'ImageURI', ACTION)
    except imageurl.Invalid as exc:
        raise messages.RedfishError(exc.message_id, *exc.message_args,
                                    detail=str(exc),
                                    properties=['/ImageURI']) from None


def _may_patch(vm):
    """403 unless a Kubernetes identity may patch ``vm``."""
    account = context.current().account
    if not isinstance(account, kubeaccounts.KubeAccount):
        return
    for attributes in permissions.needs('POST', TARGET, None,
                                        *identity.key(vm)):
        if not account.may(attributes):
            raise messages.RedfishError(
                'InsufficientPrivilege', code=403,
                detail='%s may not patch VirtualMachine %s/%s'
                % (account.name, *identity.key(vm)))


# extension-point handlers (sushy-tools' stock endpoints)

def serve_service(app):
    """The UpdateService (sushy-tools' ``/redfish/v1/UpdateService/``)."""
    if base.systems_driver(app, _METHOD) is None:
        return None
    _updates()
    return base.json_response(service_body())


def simple_update(app):
    """SimpleUpdate: 202, the Task and its monitor (module docstring)."""
    if base.systems_driver(app, _METHOD) is None:
        return None
    systems = _updates()
    body = base.json_body()
    url = check_body(body)
    credentials = _credentials(body, url)
    vm, component = _target(systems, body, url)
    _may_patch(vm)
    vm, record = systems.firmware_updates().start(vm, component, url,
                                                  credentials)
    return tasks.accepted(vm, record)


# routes of our blueprint

@base.route(SERVICE, GET=privileges.LOGIN)
def update_service():
    _updates()
    return base.json_response(service_body())


def _members(systems):
    for _, system in systems.placed():
        try:
            vm = systems.find_vm(system)
        except (error.NotFound, error.AliasAccessError):
            continue
        yield system, vm


@base.route(INVENTORY, GET=privileges.LOGIN)
def firmware_inventory():
    systems = _updates()
    members = [{'@odata.id': '%s/%s' % (INVENTORY, member_id(system, c))}
               for system, _ in _members(systems) for c in _COMPONENTS]
    return base.json_response({
        '@odata.type': '#SoftwareInventoryCollection.'
                       'SoftwareInventoryCollection',
        '@odata.id': INVENTORY,
        'Name': 'Firmware Inventory',
        'Members@odata.count': len(members),
        'Members': members,
    })


@base.route(INVENTORY + '/<member>', GET=privileges.LOGIN)
def firmware_inventory_member(member):
    systems = _updates()
    system, _, component = member.rpartition('-')
    if component not in _COMPONENTS or not system or \
            api_utils.instance_denied(identity=system):
        raise error.NotFound('No firmware inventory member %s' % member)
    try:
        vm = systems.find_vm(system)
    except error.AliasAccessError:
        raise error.NotFound('No firmware inventory member %s'
                             % member) from None
    version = systems.get_versions(system)[firmwareupdate.KEYS[component]]
    return base.json_response(inventory_body(
        system, component, identity.key(vm)[1], version))
