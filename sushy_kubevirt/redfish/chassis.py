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

"""Chassis and Thermal as the kubevirt driver serves them.

sushy-tools renders a ``UUID``, which Chassis.v1_5_0 (the version its
template declares) does not define, and ``SensorNumber`` as a string,
where the Thermal schema wants an integer. The UUID stays: Ironic names a
chassis indicator by it (``get_supported_indicators``), so the Chassis
declares v1_7_0, the first version with ``UUID``.
"""

#: The first Chassis version that defines ``UUID``.
CHASSIS_TYPE = '#Chassis.v1_7_0.Chassis'


def edit_chassis(body):
    if 'UUID' not in body or body.get('@odata.type') == CHASSIS_TYPE:
        return False
    body['@odata.type'] = CHASSIS_TYPE
    return True


def edit_thermal(body):
    changed = False
    for sensor in body.get('Temperatures') or ():
        number = sensor.get('SensorNumber')
        if isinstance(number, str) and number.isdigit():
            sensor['SensorNumber'] = int(number)
            changed = True
    return changed
