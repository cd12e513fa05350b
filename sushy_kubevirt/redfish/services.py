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

"""Services of sushy-tools the kubevirt driver does not advertise.

UpdateService (its SimpleUpdate "updates the BIOS version" of libvirt
domains; for a KubeVirt VM it answers 500, and its FirmwareInventory and
SoftwareInventory links answer 404) and the TaskService (a single canned
Task 42 that tracks nothing) are not linked from the service root and
answer 404 ResourceNotFound. The CertificateService drops the
``@Redfish.ActionInfo`` of ReplaceCertificate, a URI sushy-tools does not
serve.
"""

from sushy_tools import error

from sushy_kubevirt.redfish import base

ACTION = '#CertificateService.ReplaceCertificate'
ACTION_INFO = '@Redfish.ActionInfo'


def not_offered(app, **view_args):
    """UpdateService and TaskService: 404 for plugin drivers."""
    if not base.plugin_driver(app):
        return
    raise error.NotFound('This service is not offered by the kubevirt '
                         'driver')


def _edit_certificate_service(body):
    action = (body.get('Actions') or {}).get(ACTION) or {}
    return action.pop(ACTION_INFO, None) is not None


#: The CertificateService without the ActionInfo it cannot serve.
certificate_service_body = base.editor(_edit_certificate_service)
