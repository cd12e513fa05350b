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

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import jsonpatch


def _fw(bootloader=None, smm=None, **extra):
    domain = {}
    if bootloader is not None or extra:
        domain['firmware'] = dict(extra)
        if bootloader is not None:
            domain['firmware']['bootloader'] = bootloader
    if smm is not None:
        domain['features'] = {'smm': {'enabled': smm}}
    return fx.vm(domain=domain)


def _domain(vm):
    return vm['spec']['template']['spec']['domain']


@pytest.mark.parametrize('vm, mode, secure', [
    (fx.vm(), 'Legacy', False),
    (_fw({'bios': {}}), 'Legacy', False),
    (_fw({'bios': {'useSerial': True}}), 'Legacy', False),
    (_fw({'efi': {}}, smm=True), 'UEFI', True),
    (_fw({'efi': None}, smm=True), 'UEFI', True),
    (_fw({'efi': {'secureBoot': True}}, smm=True), 'UEFI', True),
    (_fw({'efi': {'secureBoot': False}}), 'UEFI', False),
])
def test_read(vm, mode, secure):
    assert firmware.boot_mode(vm) == mode
    assert firmware.secure_boot(vm) is secure


@pytest.mark.parametrize('vm, mode, secure, bootloader', [
    (fx.vm(), 'UEFI', False, {'efi': {'secureBoot': False}}),
    (_fw({'bios': {}}, uuid='u', serial='s'), 'UEFI', False,
     {'efi': {'secureBoot': False}}),
    (_fw({'efi': {}}, smm=True, uuid='u'), 'Legacy', False, {'bios': {}}),
    (fx.vm(), 'UEFI', True, {'efi': {'secureBoot': True}}),
])
def test_boot_mode_ops(vm, mode, secure, bootloader):
    after = jsonpatch.apply(vm, firmware.boot_mode_ops(vm, mode, secure))
    fw = _domain(after)['firmware']
    assert fw['bootloader'] == bootloader
    assert firmware.boot_mode(after) == mode
    assert firmware.secure_boot(after) is secure
    before = _domain(vm).get('firmware', {})
    for key in ('uuid', 'serial'):
        assert fw.get(key) == before.get(key), 'other fields kept'
    if secure:
        assert _domain(after)['features']['smm']['enabled'] is True
    assert firmware.boot_mode_ops(after, mode) == []


@pytest.mark.parametrize('mode', ['Uefi', 'legacy', None, 'Bios'])
def test_unknown_boot_mode(mode):
    with pytest.raises(firmware.UnknownBootMode):
        firmware.boot_mode_ops(fx.vm(), mode)


@pytest.mark.parametrize('vm, enabled, smm_after', [
    (_fw({'efi': {'secureBoot': False}}), True, True),
    (_fw({'efi': {'secureBoot': False}}, smm=False), True, True),
    (_fw({'efi': {}}, smm=True), False, True),
    (_fw({'efi': {'secureBoot': True, 'persistent': True}}, smm=True),
     False, True),
])
def test_secure_boot_ops(vm, enabled, smm_after):
    ops = firmware.secure_boot_ops(vm, enabled)
    after = jsonpatch.apply(vm, ops)
    assert firmware.secure_boot(after) is enabled
    assert firmware.boot_mode(after) == 'UEFI'
    assert _domain(after)['features']['smm']['enabled'] is smm_after
    efi_before = _domain(vm)['firmware']['bootloader']['efi'] or {}
    if 'persistent' in efi_before:
        assert _domain(after)['firmware']['bootloader']['efi'][
            'persistent'] is True
    assert firmware.secure_boot_ops(after, enabled) == []


def test_secure_boot_needs_uefi():
    for vm in (fx.vm(), _fw({'bios': {}})):
        with pytest.raises(firmware.SecureBootRequiresUefi):
            firmware.secure_boot_ops(vm, True)
        assert firmware.secure_boot_ops(vm, False) == []


def test_restart_required():
    assert not firmware.restart_required(fx.vm())
    vm = fx.vm(status={'conditions': [
        {'type': 'RestartRequired', 'status': 'True'}]})
    assert firmware.restart_required(vm)
    vm['status']['conditions'][0]['status'] = 'False'
    assert not firmware.restart_required(vm)
