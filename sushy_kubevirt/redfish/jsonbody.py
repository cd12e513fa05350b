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

"""Read and rewrite a JSON response body in place.

A rewrite also drops the mockup-only ``@Redfish.Copyright`` annotation
(:mod:`.responses` would otherwise parse the body a second time for it).
"""

import json

COPYRIGHT = '@Redfish.Copyright'


def load(response):
    """The JSON body of ``response``, or None when it is not JSON."""
    try:
        return json.loads(response.get_data())
    except ValueError:
        return None


def rewrite(response, edit):
    """Apply ``edit(body)`` to the JSON body; re-encode when it says so.

    Compact: ``json.dumps`` with an indent falls back to the slow
    pure-Python encoder.
    """
    data = load(response)
    if not isinstance(data, dict):
        return
    changed = edit(data)
    if data.pop(COPYRIGHT, None) is not None or changed:
        response.set_data(json.dumps(data))
