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

"""What a Redfish request on a System needs of Kubernetes RBAC."""

import pytest

from sushy_kubevirt.kubevirt import permissions

SYSTEM = '/redfish/v1/Systems/<identity>'


def needs(method, rule, body=None):
    return [(a['verb'], a['group'], a['resource'], a.get('subresource'),
             a.get('name')) for a in permissions.needs(
                 method, SYSTEM + rule, body, 'lab', 'vm-1')]


def test_reads_need_get_of_the_vm():
    assert needs('GET', '/Bios') == [
        ('get', 'kubevirt.io', 'virtualmachines', None, 'vm-1')]
    assert needs('HEAD', '') == needs('GET', '')


@pytest.mark.parametrize('reset, subresources', [
    ('On', ['start']), ('ForceOn', ['start']), ('ForceOff', ['stop']),
    ('GracefulShutdown', ['stop']), ('GracefulRestart', ['restart']),
    ('ForceRestart', ['restart']), ('PushPowerButton', ['start', 'stop']),
])
def test_a_reset_needs_what_virtctl_would(reset, subresources):
    assert needs('POST', '/Actions/ComputerSystem.Reset',
                 {'ResetType': reset}) == [
        ('update', 'subresources.kubevirt.io', 'virtualmachines', sub,
         'vm-1') for sub in subresources]


@pytest.mark.parametrize('body', [{'ResetType': 'Nmi'}, {}, None, []])
def test_a_reset_the_view_refuses_needs_only_to_see_the_vm(body):
    assert needs('POST', '/Actions/ComputerSystem.Reset', body) == [
        ('get', 'kubevirt.io', 'virtualmachines', None, 'vm-1')]


def test_media_need_datavolumes_and_a_vm_patch():
    patch = ('patch', 'kubevirt.io', 'virtualmachines', None, 'vm-1')
    assert needs('POST', '/VirtualMedia/<device>/Actions/'
                 'VirtualMedia.InsertMedia') == [
        ('create', 'cdi.kubevirt.io', 'datavolumes', None, None), patch]
    assert needs('POST', '/VirtualMedia/<device>/Actions/'
                 'VirtualMedia.EjectMedia') == [
        ('delete', 'cdi.kubevirt.io', 'datavolumes', None, None), patch]
    assert needs('PATCH', '/Bios/Settings') == [patch]
    assert needs('PATCH', '') == [patch]


def test_reach_is_listing_the_vms():
    assert permissions.reach('lab') == {
        'namespace': 'lab', 'verb': 'list', 'group': 'kubevirt.io',
        'resource': 'virtualmachines'}


def test_clear_log_needs_creating_events():
    assert needs('POST', '/LogServices/<log_id>/Actions/'
                 'LogService.ClearLog') == [
        ('create', '', 'events', None, None)]
    assert needs('GET', '/LogServices/<log_id>/Entries') == [
        ('get', 'kubevirt.io', 'virtualmachines', None, 'vm-1')]


def test_a_trays_certificates_need_configmap_rights():
    rule = '/VirtualMedia/<device>/Certificates'
    assert needs('POST', rule) == [('create', '', 'configmaps', None, None)]
    assert needs('DELETE', rule + '/<cert_id>') == [
        ('delete', '', 'configmaps', None, None)]
    assert needs('PATCH', '/VirtualMedia/<device>') == [
        ('patch', 'kubevirt.io', 'virtualmachines', None, 'vm-1')]
