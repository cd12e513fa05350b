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

"""Links between Systems, Managers and Chassis that agree both ways.

sushy-tools puts every System and Manager in the first Chassis but names
only the first Manager as its ``ManagedBy``, and only that Manager lists
the Chassis in ``ManagerForChassis``; its Thermal ``RelatedItem`` points
at ``Processors/CPU``, which no System has. For a systems driver of ours
(``after`` handlers of :data:`sushy_kubevirt.plugin.EXTENSION_POINTS`):

* every Manager of the first Chassis lists it in ``ManagerForChassis``;
* that Chassis is ``ManagedBy`` all of them (``ManagersInChassis``);
* Thermal ``RelatedItem`` points at the System's first processor.
"""

import json

from sushy_kubevirt import routes

_METHOD = 'get_disks'
_CPU = '/Processors/CPU'


def _ours(app):
    return routes.systems_driver(app, _METHOD)


def _edit(response, edit):
    body = json.loads(response.get_data())
    if edit(body):
        response.set_data(json.dumps(body))


def manager_body(app, response):
    if _ours(app) is None or app.feature_set != 'full':
        return
    chassis = app.chassis.chassis
    if not chassis:
        return

    def edit(body):
        links = body.setdefault('Links', {})
        want = [{'@odata.id': '/redfish/v1/Chassis/%s' % chassis[0]}]
        if links.get('ManagerForChassis') == want:
            return False
        links['ManagerForChassis'] = want
        return True
    _edit(response, edit)


def chassis_body(app, response):
    if _ours(app) is None:
        return

    def edit(body):
        links = body.get('Links') or {}
        inside = links.get('ManagersInChassis')
        if not inside or links.get('ManagedBy') == inside:
            return False
        links['ManagedBy'] = list(inside)
        return True
    _edit(response, edit)


def thermal_body(app, response):
    systems = _ours(app)
    if systems is None:
        return

    def first_cpu(system_path):
        processors = systems.get_processors(system_path.rpartition('/')[2])
        return processors[0]['id'] if processors else None

    def edit(body):
        changed = False
        for sensor in body.get('Temperatures') or ():
            items = []
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
            sensor['RelatedItem'] = items
        return changed
    _edit(response, edit)
