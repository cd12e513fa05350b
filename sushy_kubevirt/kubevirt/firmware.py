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

"""Boot mode (UEFI/Legacy) and secure boot from ``domain.firmware``.

Changes are template edits: they apply at the next VMI creation (a
restart or power on), as on a real BMC. While a VMI runs, KubeVirt shows
the pending change as VM condition ``RestartRequired``
(:func:`restart_required`).
"""

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import refusals

SecureBootRequiresUefi = refusals.SecureBootRequiresUefi
UnknownBootMode = refusals.UnknownBootMode

UEFI = 'UEFI'
LEGACY = 'Legacy'
BOOT_MODES = (UEFI, LEGACY)

BOOTLOADER = fields.DOMAIN + ('firmware', 'bootloader')
SMM = fields.DOMAIN + ('features', 'smm', 'enabled')


def _bootloader(vm):
    return fields.get(vm, *BOOTLOADER, default={})


def boot_mode(vm):
    """'UEFI' when ``bootloader.efi`` is set; 'Legacy' for bios or unset."""
    return UEFI if 'efi' in _bootloader(vm) else LEGACY


def secure_boot(vm):
    """True when UEFI and ``efi.secureBoot`` is not false.

    KubeVirt defaults an unset ``secureBoot`` to true.
    """
    bootloader = _bootloader(vm)
    if 'efi' not in bootloader:
        return False
    return (bootloader['efi'] or {}).get('secureBoot', True) is not False


def boot_mode_ops(vm, mode, secure=False):
    """Ops switching the boot mode ([] when already ``mode``).

    UEFI writes ``bootloader: {efi: {secureBoot: <secure>}}``; secure boot
    also enables SMM, which KubeVirt requires with it. Legacy writes
    ``bootloader: {bios: {}}``. Other firmware fields (uuid, serial, ...)
    are kept. Raises UnknownBootMode for other modes.
    """
    if mode not in BOOT_MODES:
        raise refusals.UnknownBootMode(
            'Unknown boot mode %r; allowed values: UEFI, Legacy' % (mode,),
            mode, 'Boot/BootSourceOverrideMode')
    if mode == boot_mode(vm):
        return []
    if mode == LEGACY:
        return fields.set_ops(vm, BOOTLOADER, {'bios': {}})
    ops = fields.set_ops(vm, BOOTLOADER, {'efi': {'secureBoot': secure}})
    if secure:
        ops += fields.set_ops(vm, SMM, True)
    return ops


def secure_boot_ops(vm, enabled):
    """Ops setting ``efi.secureBoot`` ([] when unchanged).

    Enabling requires UEFI (SecureBootRequiresUefi otherwise) and also
    sets ``features.smm.enabled: true``. Disabling under Legacy is a no-op
    (secure boot is already off).
    """
    enabled = bool(enabled)
    if enabled == secure_boot(vm):
        return []
    if boot_mode(vm) != UEFI:
        raise refusals.SecureBootRequiresUefi(
            'Secure boot requires the UEFI boot mode; switch '
            'BootSourceOverrideMode to UEFI first', 'SecureBootEnable',
            'Boot/BootSourceOverrideMode')
    ops = fields.set_ops(vm, BOOTLOADER + ('efi', 'secureBoot'), enabled)
    if enabled:
        ops += fields.set_ops(vm, SMM, True)
    return ops


def restart_required(vm):
    """True when the VM has condition RestartRequired=True."""
    return fields.condition(vm, 'RestartRequired')
