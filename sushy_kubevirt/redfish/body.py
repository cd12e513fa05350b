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

"""Read and rewrite a JSON response body in place."""

import json


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
    if isinstance(data, dict) and edit(data):
        response.set_data(json.dumps(data))
