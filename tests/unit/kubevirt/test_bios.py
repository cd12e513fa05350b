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


def test_defaults_mirror_firmware():
    attrs = bios.bios(fx.vm())
    assert set(attrs) == set(bios.DEFAULT_ATTRIBUTES)
    assert attrs['BootMode'] == 'Bios'
    assert attrs['SecureBootStatus'] == 'Disabled'
    assert attrs['L2Cache'] == '10x256 KB'
    assert bios.bios(fx.vm(domain=UEFI))['BootMode'] == 'Uefi'


def test_set_and_reset():
    vm = fx.vm(annotations={'x': 'y'})
    ops = bios.set_bios_ops(vm, {'ProcTurboMode': 'Disabled',
                                 'NumCores': '2'})
    assert ops == [jsonpatch.add(
        '/metadata/annotations/sushy-kubevirt.io~1bios', ops[0]['value'])]
    after = jsonpatch.apply(vm, ops)
    attrs = bios.bios(after)
    assert attrs['ProcTurboMode'] == 'Disabled'
    assert attrs['NumCores'] == '2'
    assert attrs['QuietBoot'] == 'true'
    assert bios.set_bios_ops(after, {'NumCores': '2'}) == []
    reset = jsonpatch.apply(after, bios.reset_bios_ops(after))
    assert bios.bios(reset) == bios.bios(vm)
    assert reset['metadata']['annotations'] == {'x': 'y'}
    assert bios.reset_bios_ops(reset) == []


def test_set_to_defaults_writes_nothing():
    assert bios.set_bios_ops(fx.vm(), {'QuietBoot': 'true'}) == []


def test_boot_mode_attributes_patch_firmware():
    vm = fx.vm()
    ops = bios.set_bios_ops(vm, {'BootMode': 'Uefi',
                                 'SecureBootStatus': 'Enabled'})
    after = jsonpatch.apply(vm, ops)
    assert firmware.boot_mode(after) == 'UEFI'
    assert firmware.secure_boot(after) is True
    assert bios.bios(after)['SecureBootStatus'] == 'Enabled'
    assert 'annotations' not in after['metadata']


@pytest.mark.parametrize('attributes, error', [
    ({'Bogus': '1'}, bios.UnknownAttribute),
    ({'NumCores': '2', 'Bogus': '1'}, bios.UnknownAttribute),
    ({'BootMode': 'UEFI'}, bios.InvalidAttributeValue),
    ({'SecureBootStatus': 'On'}, bios.InvalidAttributeValue),
    ({'NumCores': ['2']}, bios.InvalidAttributeValue),
])
def test_errors(attributes, error):
    with pytest.raises(error) as exc:
        bios.set_bios_ops(fx.vm(), attributes)
    assert exc.value.status == 400


def test_secure_boot_attribute_needs_uefi():
    with pytest.raises(firmware.SecureBootRequiresUefi):
        bios.set_bios_ops(fx.vm(), {'SecureBootStatus': 'Enabled'})


def test_corrupt_annotation_reads_defaults():
    vm = fx.vm(annotations={bios.BIOS_ANNOTATION: '{oops',
                            bios.VERSIONS_ANNOTATION: '[1]'})
    assert bios.bios(vm)['L2Cache'] == '10x256 KB'
    assert bios.versions(vm) == {'BiosVersion': '1.0.0'}


def test_versions():
    assert bios.versions(fx.vm()) == {'BiosVersion': '1.0.0'}
    vm = fx.vm(annotations={bios.VERSIONS_ANNOTATION: json.dumps(
        {'BiosVersion': '2.0'})})
    assert bios.versions(vm) == {'BiosVersion': '2.0'}
