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

"""``/healthz``: whether this process's watch cache has synced.

Not a Redfish resource: a readiness probe. 200 once every informer of
the process that answers has listed (and the API server has not refused
it since), else a 503 ``ServiceTemporarilyUnavailable`` with
``Retry-After`` saying how many have. It reads the informers' state
only, no API call; the process started them when it booted
(:mod:`sushy_kubevirt.boot`). Open without auth, like the service root:
the body names no namespace. 404 for drivers without a watch cache.
"""

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base

#: Seconds a client is told to wait before asking again (``Retry-After``).
RETRY = 5


@base.route('/healthz', GET=privileges.NO_AUTH)
def healthz():
    """``{"Status": "Synced", "Informers": n, "Synced": n}``, else 503."""
    systems = base.systems_driver(flask.current_app, 'cluster')
    if systems is None:
        raise error.NotFound(
            'No watch cache: the configured systems driver keeps none')
    informers = systems.cluster.health()
    synced = sum(1 for h in informers if h.synced)
    if synced < len(informers):
        raise messages.RedfishError(
            'ServiceTemporarilyUnavailable', RETRY, code=503,
            headers={'Retry-After': str(RETRY)},
            detail='The watch cache has not synced: %d of %d informers '
            'have' % (synced, len(informers)))
    return base.json_response({'Status': 'Synced', 'Informers': synced,
                               'Synced': synced})
