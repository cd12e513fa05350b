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

"""The CertificateService as the kubevirt driver serves it.

It drops the ``@Redfish.ActionInfo`` of ReplaceCertificate, a URI
sushy-tools does not serve.
"""

from sushy_kubevirt.redfish import base

ACTION = '#CertificateService.ReplaceCertificate'
ACTION_INFO = '@Redfish.ActionInfo'


def _edit_certificate_service(body):
    action = (body.get('Actions') or {}).get(ACTION) or {}
    return action.pop(ACTION_INFO, None) is not None


#: The CertificateService without the ActionInfo it cannot serve.
certificate_service_body = base.editor(_edit_certificate_service)
