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

import flask

from sushy_kubevirt.kubevirt import indicator
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base

#: The first Chassis version that defines ``UUID``.
CHASSIS_TYPE = '#Chassis.v1_7_0.Chassis'
#: The systems driver method of a driver whose links agree both ways.
_LINKED = 'get_disks'
_CPU = '/Processors/CPU'


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
