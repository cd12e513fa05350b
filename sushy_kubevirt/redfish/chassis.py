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

"""Chassis and Thermal as a plugin systems driver serves them.

With the KubeVirt systems driver each namespace is a Chassis
(:mod:`sushy_kubevirt.drivers.namespacechassis`): its GET and Thermal are
rendered here from the stock templates with the Systems and Managers of
that namespace (sushy-tools gives every one to its first Chassis).

sushy-tools renders a ``UUID``, which Chassis.v1_5_0 (the version its
template declares) does not define, and ``SensorNumber`` as a string,
where the Thermal schema wants an integer. The UUID stays: Ironic names a
chassis indicator by it (``get_supported_indicators``), so the Chassis
declares v1_7_0, the first version with ``UUID``.

Links agree both ways (see :mod:`.managers`): the Chassis is
``ManagedBy`` every Manager in it (``ManagersInChassis``), and Thermal's
``RelatedItem`` points at the System's first processor, not at
sushy-tools' ``Processors/CPU``, which no System has.
"""

import json

import flask

from sushy_kubevirt.kubevirt import indicator
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base

#: The first Chassis version that defines ``UUID``.
CHASSIS_TYPE = '#Chassis.v1_7_0.Chassis'
#: The systems driver method of a driver whose links agree both ways.
_LINKED = 'get_disks'
_CPU = '/Processors/CPU'
#: The systems driver method of a driver with a Chassis per namespace.
_NAMESPACES = 'chassis_driver'


def namespace_chassis(app):
    """``app.chassis`` when it is one Chassis per namespace, else None."""
    if app.feature_set != 'full' or \
            base.systems_driver(app, _NAMESPACES) is None:
        return None
    return app.chassis


def serve_chassis(app, identity):
    """GET of a namespace's Chassis: its Systems and their Managers."""
    chassis = namespace_chassis(app)
    if chassis is None:
        return None
    uuid = chassis.uuid(identity)
    systems = chassis.systems(identity)
    body = json.loads(app.render_template(
        'chassis.json', identity=identity, name=chassis.name(identity),
        uuid=uuid, contained_by=None, contained_systems=systems,
        contained_managers=systems, contained_chassis=[],
        managers=systems, storage=[], drives=[],
        indicator_led=app.indicators.get_indicator_state(uuid)))
    # Its Systems' adapters (sushy_kubevirt.redfish.networkadapters).
    body['NetworkAdapters'] = {
        '@odata.id': body['@odata.id'] + '/NetworkAdapters'}
    return base.json_response(body)


def serve_thermal(app, identity):
    """GET of a namespace's Chassis Thermal: a sensor per System in it."""
    chassis = namespace_chassis(app)
    if chassis is None:
        return None
    return base.json_response(json.loads(app.render_template(
        'thermal.json', chassis=chassis.uuid(identity),
        systems=chassis.systems(identity))))


def chassis_body(app, response):
    """The Chassis type with ``UUID``; ``ManagedBy`` every Manager."""
    linked = base.systems_driver(app, _LINKED) is not None

    def edit(body):
        changed = False
        links = body.get('Links') or {}
        inside = links.get('ManagersInChassis')
        if linked and inside and links.get('ManagedBy') != inside:
            links['ManagedBy'] = list(inside)
            changed = True
        if 'UUID' in body and body.get('@odata.type') != CHASSIS_TYPE:
            body['@odata.type'] = CHASSIS_TYPE
            changed = True
        return changed

    base.editor(edit)(app, response)


def thermal_body(app, response):
    """Integer ``SensorNumber``; ``RelatedItem``: the first processor."""
    systems = base.systems_driver(app, _LINKED)

    def first_cpu(system_path):
        processors = systems.get_processors(system_path.rpartition('/')[2])
        return processors[0]['id'] if processors else None

    def related(sensor):
        """Point CPU links at the first processor; True if any was."""
        items, changed = [], False
        for item in sensor.get('RelatedItem') or ():
            link = item.get('@odata.id', '')
            if link.endswith(_CPU):
                changed = True
                cpu = first_cpu(link[:-len(_CPU)])
                if cpu is None:
                    continue
                item = {'@odata.id': '%s/Processors/%s' % (
                    link[:-len(_CPU)], cpu)}
            items.append(item)
        if changed:
            sensor['RelatedItem'] = items
        return changed

    def edit(body):
        changed = False
        for sensor in body.get('Temperatures') or ():
            if systems is not None and related(sensor):
                changed = True
            number = sensor.get('SensorNumber')
            if isinstance(number, str) and number.isdigit():
                sensor['SensorNumber'] = int(number)
                changed = True
        return changed

    base.editor(edit)(app, response)


def check_patch(app, identity):
    """PATCH of a Chassis for plugin drivers: IndicatorLED, checked.

    The stock route answers anything else with a plain-text 400.
    """
    if flask.request.method != 'PATCH' or not base.plugin_driver(app):
        return None
    body = base.json_body()
    base.unknown(body, ('IndicatorLED',))
    if 'IndicatorLED' not in body:
        raise messages.RedfishError(
            'PropertyMissing', 'IndicatorLED', detail='PATCH of a Chassis '
            'needs IndicatorLED')
    base.choice('IndicatorLED', body['IndicatorLED'], indicator.STATES)
    return None
