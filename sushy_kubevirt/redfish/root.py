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

sushy-tools' template lacks the mandatory ``Links`` and the TaskService;
the root here links the SessionService and its Sessions
(``Links.Sessions``, what Redfish clients log in to), the UpdateService
and the TaskService (``Tasks``, :mod:`.updateservice`, :mod:`.tasks`) in
the full feature set (none otherwise), and advertises the query
parameters it serves (``ProtocolFeaturesSupported``, :mod:`.query`).
"""

from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody
from sushy_kubevirt.redfish import odata
from sushy_kubevirt.redfish import query
from sushy_kubevirt.redfish import updateservice

SESSION_SERVICE = '/redfish/v1/SessionService'
SESSIONS = SESSION_SERVICE + '/Sessions'
ACCOUNT_SERVICE = '/redfish/v1/AccountService'
UPDATE_SERVICE = '/redfish/v1/UpdateService'
TASK_SERVICE = '/redfish/v1/TaskService'


def _edit(body, updates):
    """Rewrite the stock service root ``body``; always True (changed).

    ``updates``: whether the UpdateService and TaskService are offered.
    """
    body.pop('UpdateService', None)
    if updates:
        body['UpdateService'] = {'@odata.id': UPDATE_SERVICE}
        body['Tasks'] = {'@odata.id': TASK_SERVICE}
    body['SessionService'] = {'@odata.id': SESSION_SERVICE}
    body['AccountService'] = {'@odata.id': ACCOUNT_SERVICE}
    links = body.setdefault('Links', {})
    links['Sessions'] = {'@odata.id': SESSIONS}
    # TopSkipQuery is ServiceRoot 1.17's; sushy-tools' template says 1.5.
    body['@odata.type'] = '#%s.ServiceRoot' % odata.SERVICE_ROOT
    body['ProtocolFeaturesSupported'] = dict(query.FEATURES)
    return True


def service_root_body(app, response):
    """The service root of a plugin driver (the module docstring)."""
    if base.plugin_driver(app):
        offered = updateservice.offered(app)
        jsonbody.rewrite(response, lambda body: _edit(body, offered))
