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

"""BIOS attributes and firmware versions kept on the VM as annotations.

Attributes live in annotation :data:`BIOS_ANNOTATION` (a JSON object);
without it the defaults of sushy-tools' libvirt driver apply. Two
attributes are not stored but mirror the real firmware, so they never
disagree with BootSourceOverrideMode or SecureBoot: ``BootMode``
('Uefi'/'Bios') and ``SecureBootStatus`` ('Enabled'/'Disabled');
setting them patches ``domain.firmware`` like the boot-mode and
secure-boot requests do (applied at the next start).
"""

import json

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import refusals

InvalidAttributeValue = refusals.InvalidAttributeValue
UnknownAttribute = refusals.UnknownAttribute

BIOS_ANNOTATION = 'sushy-kubevirt.io/bios'
VERSIONS_ANNOTATION = 'sushy-kubevirt.io/versions'
DEFAULT_ATTRIBUTES = {
    'BootMode': 'Uefi',
    'EmbeddedSata': 'Raid',
    'L2Cache': '10x256 KB',
    'NicBoot1': 'NetworkBoot',
    'NumCores': '10',
    'ProcTurboMode': 'Enabled',
    'QuietBoot': 'true',
    'SecureBootStatus': 'Enabled',
    'SerialNumber': 'QPX12345',
    'SysPassword': '',
}
DEFAULT_VERSIONS = {'BiosVersion': '1.0.0'}
_BOOT_MODES = {'Uefi': firmware.UEFI, 'Bios': firmware.LEGACY}
_SECURE = {'Enabled': True, 'Disabled': False}
_DERIVED = ('BootMode', 'SecureBootStatus')


def _load(vm, key, default):
    raw = fields.annotation(vm, key)
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        value = None
    return dict(value) if isinstance(value, dict) else dict(default)


def _stored(vm):
    return _load(vm, BIOS_ANNOTATION, DEFAULT_ATTRIBUTES)


def bios(vm):
    """Current BIOS attributes (a new dict)."""
    attributes = _stored(vm)
    attributes['BootMode'] = (
        'Uefi' if firmware.boot_mode(vm) == firmware.UEFI else 'Bios')
    attributes['SecureBootStatus'] = (
        'Enabled' if firmware.secure_boot(vm) else 'Disabled')
    return attributes


def _check(name, value, allowed):
    if value not in allowed:
        raise refusals.InvalidAttributeValue(
            'Invalid value %r for BIOS attribute %s; allowed: %s'
            % (value, name, ', '.join(allowed)))


def _store_ops(vm, attributes):
    if attributes == _stored(vm):
        return []
    return fields.annotation_ops(
        vm, BIOS_ANNOTATION, json.dumps(attributes, sort_keys=True))


def set_bios_ops(vm, attributes):
    """Ops updating the given attributes ([] when nothing changes).

    Raises UnknownAttribute for a name the system does not have (nothing
    is changed) and InvalidAttributeValue for a bad BootMode /
    SecureBootStatus or a non-scalar value.
    """
    unknown = sorted(set(attributes) - set(DEFAULT_ATTRIBUTES))
    if unknown:
        raise refusals.UnknownAttribute(
            'Unknown BIOS attribute(s): %s' % ', '.join(unknown))
    for name, value in attributes.items():
        if not isinstance(value, (str, int, float, bool)):
            raise refusals.InvalidAttributeValue(
                'BIOS attribute %s must be a string, number or boolean'
                % name)
    ops = []
    view = vm
    if 'BootMode' in attributes:
        _check('BootMode', attributes['BootMode'], list(_BOOT_MODES))
        ops += firmware.boot_mode_ops(
            vm, _BOOT_MODES[attributes['BootMode']])
        view = jsonpatch.apply(vm, ops)
    if 'SecureBootStatus' in attributes:
        _check('SecureBootStatus', attributes['SecureBootStatus'],
               list(_SECURE))
        ops += firmware.secure_boot_ops(
            view, _SECURE[attributes['SecureBootStatus']])
    stored = _stored(vm)
    stored.update({k: v for k, v in attributes.items()
                   if k not in _DERIVED})
    return ops + _store_ops(vm, stored)


def reset_bios_ops(vm):
    """Ops restoring the default stored attributes (firmware untouched)."""
    return fields.remove_annotation_ops(vm, BIOS_ANNOTATION)


def versions(vm):
    """Firmware versions, e.g. ``{'BiosVersion': '1.0.0'}``.

    Read from annotation :data:`VERSIONS_ANNOTATION` (JSON), else the
    libvirt driver's default.
    """
    return _load(vm, VERSIONS_ANNOTATION, DEFAULT_VERSIONS)
