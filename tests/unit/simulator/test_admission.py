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

"""Unit tests: VM defaulting and validation causes."""

import uuid

import pytest

from sushy_kubevirt.simulator import admission
from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import objects


def fields(vm):
    return [c['field'] for c in admission.validate_vm(vm)]


def test_default_fills_only_empty_values_with_random_ones():
    def firmware(given):
        vm = {'metadata': {'name': 'x'}, 'spec': {'template': {'spec': {
            'domain': {'firmware': dict(given)}}}}}
        return admission.default_vm(vm)['spec']['template']['spec'][
            'domain']['firmware']
    first, second = firmware({'serial': 'keep'}), firmware({})
    assert first['serial'] == 'keep'
    assert uuid.UUID(first['uuid']).version == 4
    assert uuid.UUID(second['serial']).version == 4
    assert first['uuid'] != second['uuid']
    assert firmware({'uuid': 'u', 'serial': 's'}) == {'uuid': 'u',
                                                      'serial': 's'}


def test_updates_are_not_defaulted():
    vm = {'metadata': {'name': 'x'}, 'spec': {'template': {'spec': {
        'domain': {}}}}}
    admission.mutate_vm('UPDATE', vm, vm, 'someone')
    assert 'firmware' not in vm['spec']['template']['spec']['domain']
    admission.mutate_vm('CREATE', vm, None, 'someone')
    assert vm['spec']['template']['spec']['domain']['firmware']['uuid']


def test_valid_vm_has_no_causes():
    assert admission.validate_vm(objects.make_vm('ok')) == []


def test_missing_template():
    assert fields({'spec': {'runStrategy': 'Halted'}}) == ['spec.template']


def test_duplicate_boot_order_names_the_second_device():
    vm = objects.make_vm('dup')
    devices = vm['spec']['template']['spec']['domain']['devices']
    devices['disks'].append({'name': 'cd', 'cdrom': {}, 'bootOrder': 2})
    assert fields(vm) == [
        'spec.template.spec.domain.devices.interfaces[0].bootOrder']


def test_devices_without_boot_order_are_fine():
    vm = objects.make_vm('none', boot_order=False)
    assert admission.validate_vm(vm) == []


@pytest.mark.parametrize('smm,ok', [(None, False), ({}, True),
                                    ({'enabled': True}, True),
                                    ({'enabled': False}, False)])
def test_secure_boot_default_true_needs_smm(smm, ok):
    vm = objects.make_vm('sb', efi=True)
    domain = vm['spec']['template']['spec']['domain']
    domain['firmware']['bootloader'] = {'efi': {}}
    if smm is not None:
        domain['features'] = {'smm': smm}
    assert (admission.validate_vm(vm) == []) is ok


def test_denied_is_a_webhook_422():
    vm = objects.make_vm('both')
    vm['spec']['running'] = False
    with pytest.raises(apistatus.ApiError) as exc:
        admission.check_vm('CREATE', vm, None, 'admin')
    doc = exc.value.to_status()
    assert doc['code'] == 422 and doc['reason'] == 'Invalid'
    assert doc['details']['causes'][0]['field'] == 'spec.running'
