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

"""Our ``Oem`` blocks carry an ``@odata.type``, as DSP0266 requires.

The type names a schema of our own namespace; the service publishes no
CSDL for it, so a validator checks the block's form, not its properties.
"""

VENDOR = 'SushyKubevirt'
VERSION = 'v1_0_0'


def typed(body, resource):
    """Type ``body['Oem'][VENDOR]`` as ``#SushyKubevirt.v1_0_0.<resource>``.

    :returns: True when it changed ``body``.
    """
    block = (body.get('Oem') or {}).get(VENDOR)
    if not isinstance(block, dict) or '@odata.type' in block:
        return False
    block['@odata.type'] = '#%s.%s.%s' % (VENDOR, VERSION, resource)
    return True
