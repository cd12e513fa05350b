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

import json

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import jsonpatch

UEFI = {'firmware': {'bootloader': {'efi': {'secureBoot': False}}}}
VMI_A = {'metadata': {'uid': 'a'}}
VMI_B = {'metadata': {'uid': 'b'}}


def test_defaults_mirror_firmware():
    attrs = bios.bios(fx.vm())
    assert set(attrs) == {a.name for a in bios.REGISTRY}
    assert attrs['BootMode'] == 'Bios'
    assert attrs['SecureBootStatus'] == 'Disabled'
    assert attrs['L2Cache'] == '10x256 KB'
    assert attrs['NumCores'] == 1 and attrs['QuietBoot'] is True
    assert bios.bios(fx.vm(domain=UEFI))['BootMode'] == 'Uefi'


@pytest.mark.parametrize('domain, cpus', [
    ({'cpu': {'cores': 2}}, 2),
    ({'cpu': {'sockets': 2, 'cores': 3, 'threads': 2}}, 12),
    ({'resources': {'requests': {'cpu': '1500m'}}}, 2),
])
def test_num_cores_mirrors_the_vm_cpus(domain, cpus):
    vm = fx.vm(domain=domain, annotations={
        bios.BIOS_ANNOTATION: json.dumps({'NumCores': 10})})
    assert bios.bios(vm)['NumCores'] == cpus
    assert bios.settings(vm)['NumCores'] == cpus
    with pytest.raises(bios.Refused):
        bios.set_bios_ops(vm, {'NumCores': cpus})


def test_pending_until_another_vmi():
    vm = fx.vm(annotations={'x': 'y'})
    ops = bios.set_bios_ops(vm, {'ProcTurboMode': 'Disabled'}, VMI_A)
    after = jsonpatch.apply(vm, ops)
    assert json.loads(after['metadata']['annotations'][
        bios.PENDING_ANNOTATION]) == {
            'vmi': 'a', 'reset': False,
            'attributes': {'ProcTurboMode': 'Disabled'}}
    assert bios.bios(after, VMI_A)['ProcTurboMode'] == 'Enabled'
    assert bios.settings(after, VMI_A)['ProcTurboMode'] == 'Disabled'
    assert bios.pending(after, VMI_A) and not bios.consumed(after, VMI_A)
    assert bios.bios(after, None)['ProcTurboMode'] == 'Enabled'
    assert bios.bios(after, VMI_B)['ProcTurboMode'] == 'Disabled'
    folded = jsonpatch.apply(after, bios.apply_pending_ops(after, VMI_B))
    assert bios.PENDING_ANNOTATION not in folded['metadata']['annotations']
    assert bios.bios(folded, None)['ProcTurboMode'] == 'Disabled'
    assert bios.apply_pending_ops(folded, VMI_B) == []
    assert bios.apply_pending_ops(after, VMI_A) == []


def test_setting_the_current_value_clears_the_change():
    vm = fx.vm()
    after = jsonpatch.apply(vm, bios.set_bios_ops(
        vm, {'ProcTurboMode': 'Disabled'}))
    back = jsonpatch.apply(after, bios.set_bios_ops(
        after, {'ProcTurboMode': 'Enabled'}))
    assert not bios.pending(back)
    assert bios.set_bios_ops(vm, {'QuietBoot': True}) == []


def test_reset_at_next_boot():
    vm = fx.vm(annotations={bios.BIOS_ANNOTATION: json.dumps(
        {'ProcTurboMode': 'Disabled'})})
    after = jsonpatch.apply(vm, bios.reset_bios_ops(vm, VMI_A))
    assert bios.bios(after, VMI_A)['ProcTurboMode'] == 'Disabled'
    assert bios.settings(after, VMI_A)['ProcTurboMode'] == 'Enabled'
    assert bios.bios(after, VMI_B) == bios.bios(fx.vm(), VMI_B)


def test_boot_mode_attributes_patch_firmware():
    vm = fx.vm()
    ops = bios.set_bios_ops(vm, {'BootMode': 'Uefi',
                                 'SecureBootStatus': 'Enabled'})
    after = jsonpatch.apply(vm, ops)
    assert firmware.boot_mode(after) == 'UEFI'
    assert firmware.secure_boot(after) is True
    assert bios.bios(after)['SecureBootStatus'] == 'Enabled'
    assert 'annotations' not in after['metadata']


@pytest.mark.parametrize('attributes, message_id', [
    ({'Bogus': '1'}, 'PropertyUnknown'),
    ({'ProcTurboMode': 'Disabled', 'Bogus': '1'}, 'PropertyUnknown'),
    ({'BootMode': 'UEFI'}, 'PropertyValueNotInList'),
    ({'SecureBootStatus': 'On'}, 'PropertyValueNotInList'),
    ({'ProcTurboMode': ['Enabled']}, 'PropertyValueTypeError'),
    ({'QuietBoot': 'true'}, 'PropertyValueTypeError'),
    ({'QuietBoot': 1}, 'PropertyValueTypeError'),
    ({'SerialNumber': float('inf')}, 'PropertyValueTypeError'),
    ({'SerialNumber': float('nan')}, 'PropertyValueTypeError'),
    ({'SerialNumber': 'x' * 17}, 'StringValueTooLong'),
    ({'SerialNumber': 'a\nb'}, 'StringValueTooLong'),
    ({'NumCores': 12}, 'PropertyNotWritable'),
    ({'L2Cache': '1 MB'}, 'PropertyNotWritable'),
    ({}, 'PropertyValueTypeError'),
    ([], 'PropertyValueTypeError'),
])
def test_errors(attributes, message_id):
    with pytest.raises((bios.Refused, bios.Unknown)) as exc:
        bios.set_bios_ops(fx.vm(), attributes)
    assert exc.value.status == 400
    assert exc.value.message_id == message_id


def test_secure_boot_attribute_needs_uefi():
    with pytest.raises(firmware.SecureBootRequiresUefi):
        bios.set_bios_ops(fx.vm(), {'SecureBootStatus': 'Enabled'})


def test_corrupt_annotations_read_defaults():
    vm = fx.vm(annotations={bios.BIOS_ANNOTATION: '{oops',
                            bios.PENDING_ANNOTATION: '[1]'})
    assert bios.bios(vm, VMI_B)['L2Cache'] == '10x256 KB'
    assert not bios.pending(vm, VMI_B)


def test_passwords_read_null_and_stay_out_of_the_annotations():
    vm = fx.vm()
    ops = bios.set_bios_ops(vm, {'SysPassword': 'pw', 'QuietBoot': False})
    assert 'pw' not in json.dumps(ops)
    after = jsonpatch.apply(vm, ops)
    assert bios.settings(after)['SysPassword'] is None
    assert bios.settings(after)['QuietBoot'] is False
    assert bios.set_bios_ops(vm, {'SysPassword': 'pw'}) == []
    assert bios.passwords({'SysPassword': 'pw', 'QuietBoot': False}) == {
        'SysPassword': 'pw'}


def test_refused_passwords_are_not_echoed():
    with pytest.raises(bios.Refused) as caught:
        bios.check({'SysPassword': 'secret' * 20})
    assert caught.value.message_args[0] == bios.HIDDEN
    assert 'secret' not in str(caught.value)


def test_clear_text_is_found_and_rewritten():
    vm = fx.vm(annotations={
        bios.BIOS_ANNOTATION: json.dumps({'SysPassword': 'old',
                                          'QuietBoot': False}),
        bios.PENDING_ANNOTATION: json.dumps({
            'vmi': '', 'reset': False,
            'attributes': {'SysPassword': 'new'}})})
    assert bios.bios(vm)['SysPassword'] is None
    assert bios.clear_text(vm) == {'SysPassword': 'new'}
    after = jsonpatch.apply(vm, bios.set_bios_ops(vm, {'QuietBoot': True}))
    assert bios.clear_text(after) == {}
    assert 'old' not in json.dumps(after) and 'new' not in json.dumps(after)


def test_secret_body_is_owned_by_the_vm():
    vm = fx.vm(name='x' * 253)
    body = bios.secret_body(vm, {'SysPassword': 'pw'})
    assert len(body['metadata']['name']) <= 253
    assert body['metadata']['ownerReferences'][0]['uid'] == \
        vm['metadata']['uid']
    assert body['data'] == {'SysPassword': 'cHc='}
    assert bios.secret_ops(vm, {'SysPassword': 'pw'})[0]['op'] == 'test'
