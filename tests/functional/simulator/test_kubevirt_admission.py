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

"""virt-api admission through the official client: 422s and defaulting."""

import uuid

from kubernetes import client
import pytest
from tests.functional.simulator import apitools
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import virt

G, V, P = 'kubevirt.io', 'v1', 'virtualmachines'
WEBHOOK = 'admission webhook "virtualmachine-validator.kubevirt.io" ' \
          'denied the request: '


def create(custom, body):
    return custom.create_namespaced_custom_object(G, V, 'default', P, body)


def rejected(custom, body):
    with pytest.raises(client.ApiException) as exc:
        create(custom, body)
    assert exc.value.status == 422
    status = apitools.body(exc.value)
    assert status['reason'] == 'Invalid'
    assert status['message'].startswith(WEBHOOK)
    return status


def test_running_and_run_strategy_are_exclusive(custom):
    vm = objects.make_vm('both')
    vm['spec']['running'] = True
    status = rejected(custom, vm)
    assert status['details']['causes'] == [{
        'reason': 'FieldValueInvalid', 'field': 'spec.running',
        'message': 'Running and RunStrategy are mutually exclusive. Note '
                   'that Running is deprecated, please use RunStrategy '
                   'instead'}]


def test_one_of_running_or_run_strategy_is_required(custom):
    vm = objects.make_vm('neither')
    del vm['spec']['runStrategy']
    status = rejected(custom, vm)
    assert status['message'] == WEBHOOK + 'RunStrategy must be specified'
    assert status['details']['causes'][0]['field'] == 'spec.running'


def test_unknown_run_strategy(custom):
    vm = objects.make_vm('odd', run_strategy='Sometimes')
    status = rejected(custom, vm)
    assert status['details']['causes'][0]['field'] == 'spec.runStrategy'


def test_boot_order_unique_across_disks_and_interfaces(custom):
    vm = objects.make_vm('dup')
    devices = vm['spec']['template']['spec']['domain']['devices']
    devices['interfaces'][0]['bootOrder'] = 1
    field = 'spec.template.spec.domain.devices.interfaces[0].bootOrder'
    status = rejected(custom, vm)
    assert status['details']['causes'] == [{
        'reason': 'FieldValueInvalid', 'field': field,
        'message': 'Boot order for %s already set for a different device.'
                   % field}]


def test_boot_order_must_be_positive(custom):
    vm = objects.make_vm('zero')
    vm['spec']['template']['spec']['domain']['devices']['disks'][0][
        'bootOrder'] = 0
    status = rejected(custom, vm)
    assert status['details']['causes'][0]['field'] == \
        'spec.template.spec.domain.devices.disks[0].bootOrder'


@pytest.mark.parametrize('efi', [{}, {'secureBoot': True}])
def test_secure_boot_requires_smm(custom, efi):
    vm = objects.make_vm('sb', efi=True)
    vm['spec']['template']['spec']['domain']['firmware']['bootloader'] = {
        'efi': efi}
    status = rejected(custom, vm)
    assert status['details']['causes'] == [{
        'reason': 'FieldValueInvalid',
        'field': 'spec.template.spec.domain',
        'message': 'spec.template.spec.domain has EFI SecureBoot enabled. '
                   'SecureBoot requires SMM, which is currently disabled.'}]


def test_secure_boot_with_smm_and_plain_efi_are_accepted(custom):
    create(custom, objects.make_vm('sb-smm', efi=True, secure_boot=True))
    create(custom, objects.make_vm('efi-only', efi=True, secure_boot=False))


def test_firmware_uuid_and_serial_defaulted_at_random(custom):
    vm = objects.make_vm('plain')
    del vm['spec']['template']['spec']['domain']['firmware']
    created = create(custom, vm)
    firmware = created['spec']['template']['spec']['domain']['firmware']
    assert uuid.UUID(firmware['uuid']).version == 4
    assert uuid.UUID(firmware['serial']).version == 4
    assert firmware['uuid'] != firmware['serial']


def test_an_emptied_firmware_uuid_gets_the_legacy_one(custom, simulator):
    create(custom, objects.make_vm('emptied'))
    custom.patch_namespaced_custom_object(
        'kubevirt.io', 'v1', 'default', 'virtualmachines', 'emptied',
        {'spec': {'template': {'spec': {'domain': {'firmware': {
            'uuid': None}}}}}})
    legacy = str(uuid.uuid5(
        uuid.UUID('6a1a24a1-4061-4607-8bf4-a3963d0c5895'), 'emptied'))
    simulator.wait_for(lambda: custom.get_namespaced_custom_object(
        'kubevirt.io', 'v1', 'default', 'virtualmachines', 'emptied')[
            'spec']['template']['spec']['domain']['firmware'].get('uuid')
        == legacy)


def test_given_firmware_uuid_is_kept(custom):
    vm = objects.make_vm('pinned')
    vm['spec']['template']['spec']['domain']['firmware'].update(
        uuid='11111111-2222-3333-4444-555555555555', serial='S-1')
    firmware = create(custom, vm)['spec']['template']['spec']['domain'][
        'firmware']
    assert firmware['uuid'] == '11111111-2222-3333-4444-555555555555'
    assert firmware['serial'] == 'S-1'


def test_updates_are_validated_and_change_nothing(custom):
    created = create(custom, objects.make_vm('upd'))
    patch = [{'op': 'add', 'path': '/spec/template/spec/domain/devices/'
              'interfaces/0/bootOrder', 'value': 1}]
    with pytest.raises(client.ApiException) as exc:
        vmtools.call(
            custom.api_client, 'PATCH',
            '/apis/kubevirt.io/v1/namespaces/default/virtualmachines/upd',
            patch, 'application/json-patch+json')
    assert exc.value.status == 422
    current = custom.get_namespaced_custom_object(G, V, 'default', P, 'upd')
    assert current['spec'] == created['spec']
    assert current['metadata']['generation'] == 1


def test_vmi_status_changes_only_by_kubevirt(simulator, custom):
    """virt-api puts back a VMI status that another user changed."""
    create(custom, objects.make_vm('mine', run_strategy='Always'))
    simulator.wait_for(lambda: (simulator.store.try_get(
        virt.VMI_RT, 'default', 'mine') or {}).get('status', {}).get(
            'phase') == 'Running')
    vmtools.call(
        custom.api_client, 'PATCH',
        '/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances/mine',
        [{'op': 'replace', 'path': '/status/phase', 'value': 'Succeeded'}],
        'application/json-patch+json')
    vmi = custom.get_namespaced_custom_object(
        G, V, 'default', 'virtualmachineinstances', 'mine')
    assert vmi['status']['phase'] == 'Running'
    simulator.guest_ends('default', 'mine')
    assert simulator.store.get(virt.VMI_RT, 'default', 'mine')['status'][
        'phase'] == 'Succeeded'
