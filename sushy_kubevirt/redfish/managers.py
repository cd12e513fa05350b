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

"""Managers as a plugin systems driver serves them.

sushy-tools leaves ``ServiceEntryPointUUID`` null; here it is the service
root's UUID, and the ``UUID`` of a Manager whose System's firmware UUID
holds none is null. sushy-tools puts every System and Manager in the first
Chassis but only its first Manager lists that Chassis in
``ManagerForChassis``; here every Manager lists the Chassis of its
System's namespace (see :mod:`.chassis` for the other direction).
``FirmwareVersion`` is the BMC's version (sushy-tools says ``1.00``),
which a SimpleUpdate of the Manager changes (:mod:`.updateservice`).
Outside the full feature set a Manager is read-only.
"""

import json

import flask

from sushy_kubevirt.drivers import lookup
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody

#: The systems driver method of a driver with a Chassis per namespace.
_NAMESPACES = 'chassis_driver'


def manager_body(app, response):
    """``ServiceEntryPointUUID`` and ``Links.ManagerForChassis``."""
    if not base.plugin_driver(app):
        return
    root = json.loads(app.render_template('root.json'))
    identity = flask.request.view_args['identity']
    versions = base.systems_driver(app, 'firmware_updates')
    chassis = None
    if app.feature_set == 'full' and \
            base.systems_driver(app, _NAMESPACES) is not None:
        chassis = app.chassis.of_system(identity)

    def edit(body):
        changed = False
        version = versions.get_versions(identity).get('FirmwareVersion') \
            if versions is not None and 'FirmwareVersion' in body else None
        if version is not None and body.get('FirmwareVersion') != version:
            body['FirmwareVersion'] = version
            changed = True
        if body.get('ServiceEntryPointUUID', '') is None:
            body['ServiceEntryPointUUID'] = root['UUID']
            changed = True
        if body.get('UUID') is not None and \
                lookup.canonical_uuid(body['UUID']) is None:
            body['UUID'] = None   # its System's firmware UUID holds none
            changed = True
        if chassis:
            links = body.setdefault('Links', {})
            want = [{'@odata.id': '/redfish/v1/Chassis/%s' % chassis}]
            if links.get('ManagerForChassis') != want:
                links['ManagerForChassis'] = want
                changed = True
        return changed

    jsonbody.rewrite(response, edit)


def check_patch(app, identity):
    """A Manager PATCH outside the full feature set is a 405."""
    if base.plugin_driver(app) and app.feature_set != 'full':
        raise messages.RedfishError(
            'OperationNotAllowed', code=405, headers={'Allow': 'GET, HEAD'},
            detail='Managers are read-only in the %r feature set'
            % app.feature_set)
