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

"""The service root as the kubevirt driver serves it.

sushy-tools' template lacks the mandatory ``Links`` and advertises an
UpdateService whose SimpleUpdate cannot work on a KubeVirt VM (it answers
500); the root here links the SessionService and its Sessions
(``Links.Sessions``, what Redfish clients log in to) and no UpdateService,
and advertises the query parameters it serves
(``ProtocolFeaturesSupported``, :mod:`.query`).
"""

from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import odata
from sushy_kubevirt.redfish import query

SESSION_SERVICE = '/redfish/v1/SessionService'
SESSIONS = SESSION_SERVICE + '/Sessions'
ACCOUNT_SERVICE = '/redfish/v1/AccountService'
#: Services sushy-tools links that the kubevirt driver does not offer.
NOT_OFFERED = ('UpdateService', 'TaskService')


def _edit(body):
    """Rewrite the stock service root ``body``; always True (changed)."""
    for name in NOT_OFFERED:
        body.pop(name, None)
    body['SessionService'] = {'@odata.id': SESSION_SERVICE}
    body['AccountService'] = {'@odata.id': ACCOUNT_SERVICE}
    links = body.setdefault('Links', {})
    links['Sessions'] = {'@odata.id': SESSIONS}
    # TopSkipQuery is ServiceRoot 1.17's; sushy-tools' template says 1.5.
    body['@odata.type'] = '#%s.ServiceRoot' % odata.SERVICE_ROOT
    body['ProtocolFeaturesSupported'] = dict(query.FEATURES)
    return True


#: The service root of a plugin driver (the module docstring).
service_root_body = base.editor(_edit)
