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
"""LogServices: a System's Kubernetes Events and the security log.

Each System has one LogService, ``Log``: the Events about its
VirtualMachine, VMI and DataVolumes (virt-controller's and CDI's), read
from the watch cache. Each Manager has ``SecurityLog``: the service's
logins, refused logins, lockouts and refused privileges
(:mod:`sushy_kubevirt.accounts.securitylog`), the same for every Manager
of the emulator. Both show their newest
:data:`~sushy_kubevirt.kubevirt.logentries.MAX_ENTRIES` entries and are
cleared by ``LogService.ClearLog`` (a marker Event: the entries older
than it are hidden, on every worker).
"""

import datetime

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.drivers import logs
from sushy_kubevirt.kubevirt import logentries
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base

SYSTEM = '/redfish/v1/Systems/%s'
MANAGER = '/redfish/v1/Managers/%s'
SYSTEM_LOG = 'Log'
SECURITY_LOG = 'SecurityLog'
CLEAR = 'LogService.ClearLog'
_DESCRIPTIONS = {
    SYSTEM_LOG: ('System Event Log', 'The Kubernetes Events of the '
                 'VirtualMachine, its instance and its DataVolumes'),
    SECURITY_LOG: ('Security Log', 'Logins, refused logins, lockouts and '
                   'refused privileges of this service'),
}


def collection(owner, member):
    """The LogServiceCollection of ``owner`` (an ``@odata.id``)."""
    path = owner + '/LogServices'
    return {
        '@odata.type': '#LogServiceCollection.LogServiceCollection',
        '@odata.id': path,
        'Name': 'Log Service Collection',
        'Members@odata.count': 1,
        'Members': [{'@odata.id': '%s/%s' % (path, member)}],
    }


def service(owner, log_id, now):
    """The LogService ``log_id`` of ``owner``; ``now``: an aware datetime."""
    path = '%s/LogServices/%s' % (owner, log_id)
    name, description = _DESCRIPTIONS[log_id]
    return {
        '@odata.type': '#LogService.v1_1_3.LogService',
        '@odata.id': path,
        'Id': log_id,
        'Name': name,
        'Description': description,
        'MaxNumberOfRecords': logentries.MAX_ENTRIES,
        'OverWritePolicy': 'WrapsWhenFull',
        'DateTime': logentries.iso(now),
        'DateTimeLocalOffset': '+00:00',
        'ServiceEnabled': True,
        'LogEntryType': 'Event',
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'Entries': {'@odata.id': path + '/Entries'},
        'Actions': {'#' + CLEAR: {'target': path + '/Actions/' + CLEAR}},
    }


def entries(owner, log_id, events, origin=None):
    """The LogEntryCollection of ``events`` (expanded, as the schema says)."""
    path = '%s/LogServices/%s/Entries' % (owner, log_id)
    members = [logentries.entry(e, path, origin) for e in events]
    return {
        '@odata.type': '#LogEntryCollection.LogEntryCollection',
        '@odata.id': path,
        'Name': '%s Entries' % _DESCRIPTIONS[log_id][0],
        'Members@odata.count': len(members),
        'Members': members,
    }


def _one(events, entry_id, path, origin=None):
    for event in events:
        if logentries.entry_id(event) == entry_id:
            return logentries.entry(event, path, origin)
    raise error.NotFound()


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _systems():
    systems = base.systems_driver(flask.current_app, 'find_vm')
    if systems is None:
        raise error.NotFound()
    return systems


def _system(identity):
    """The systems driver and the System's ``@odata.id``, else a 404."""
    systems = _systems()
    if api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    systems.find_vm(identity)
    return systems, SYSTEM % identity


def _manager(identity):
    """The systems driver and the Manager's ``@odata.id``, else a 404."""
    app = flask.current_app
    systems = _systems()
    if app.feature_set == 'minimum' or \
            not hasattr(systems, 'sessions'):
        raise error.NotFound()
    app.managers.get_manager(identity)
    return systems, MANAGER % identity


def _check_clear_body():
    """ClearLog takes no parameter: an empty body or ``{}``."""
    if not flask.request.get_data():
        return
    body = base.json_body()
    if body:
        name = sorted(body)[0]
        raise messages.RedfishError('ActionParameterUnknown', CLEAR, name,
                                    properties=['/' + name])


def _user():
    return flask.request.environ.get(auth.USER_KEY)


@base.route('/redfish/v1/Systems/<identity>/LogServices',
            GET=privileges.LOGIN)
def system_collection(identity):
    return base.json_response(collection(_system(identity)[1], SYSTEM_LOG))


_SYSTEM_LOG = '/redfish/v1/Systems/<identity>/LogServices/' + SYSTEM_LOG
_SECURITY_LOG = '/redfish/v1/Managers/<identity>/LogServices/' + \
    SECURITY_LOG


@base.route(_SYSTEM_LOG, GET=privileges.LOGIN)
def system_service(identity):
    return base.json_response(service(_system(identity)[1], SYSTEM_LOG,
                                      _now()))


@base.route(_SYSTEM_LOG + '/Entries', GET=privileges.LOGIN)
def system_entries(identity):
    systems, owner = _system(identity)
    return base.json_response(entries(
        owner, SYSTEM_LOG, logs.system_events(systems, identity), owner))


@base.route(_SYSTEM_LOG + '/Entries/<entry_id>', GET=privileges.LOGIN)
def system_entry(identity, entry_id):
    systems, owner = _system(identity)
    path = '%s/LogServices/%s/Entries' % (owner, SYSTEM_LOG)
    return base.json_response(_one(logs.system_events(systems, identity),
                                   entry_id, path, owner))


@base.route(_SYSTEM_LOG + '/Actions/' + CLEAR,
            POST=privileges.CONFIGURE_COMPONENTS)
def system_clear(identity):
    systems, _ = _system(identity)
    _check_clear_body()
    logs.clear_system(systems, identity, _user())
    return flask.Response(status=204)


@base.route('/redfish/v1/Managers/<identity>/LogServices',
            GET=privileges.LOGIN)
def manager_collection(identity):
    return base.json_response(collection(_manager(identity)[1],
                                         SECURITY_LOG))


@base.route(_SECURITY_LOG, GET=privileges.LOGIN)
def manager_service(identity):
    return base.json_response(service(_manager(identity)[1], SECURITY_LOG,
                                      _now()))


@base.route(_SECURITY_LOG + '/Entries', GET=privileges.LOGIN)
def manager_entries(identity):
    systems, owner = _manager(identity)
    return base.json_response(entries(owner, SECURITY_LOG,
                                      logs.security_events(systems)))


@base.route(_SECURITY_LOG + '/Entries/<record_id>', GET=privileges.LOGIN)
def manager_entry(identity, record_id):
    systems, owner = _manager(identity)
    path = '%s/LogServices/%s/Entries' % (owner, SECURITY_LOG)
    return base.json_response(_one(logs.security_events(systems), record_id,
                                   path))


@base.route(_SECURITY_LOG + '/Actions/' + CLEAR,
            POST=privileges.CONFIGURE_MANAGER)
def manager_clear(identity):
    systems, _ = _manager(identity)
    _check_clear_body()
    logs.clear_security(systems, _user())
    return flask.Response(status=204)


def _link(body, key, path):
    if key not in body and body.get('@odata.id'):
        body[key] = {'@odata.id': path}
        return True
    return False


@base.editor
def system_link(body):
    """``LogServices`` in a System's body."""
    return _link(body, 'LogServices', '%s/LogServices' % body.get(
        '@odata.id', ''))


@base.editor
def manager_link(body):
    """``LogServices`` in a Manager's body."""
    return _link(body, 'LogServices', '%s/LogServices' % body.get(
        '@odata.id', ''))
