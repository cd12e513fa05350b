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

"""Ironic's redfish call sequences through sushy, as Ironic makes them.

Systems are enrolled as Ironic devstack does, by VM name
(``/redfish/v1/Systems/<vm-name>``, answered by a 307 to the firmware
UUID), with sushy's session-or-Basic auth. The sequences follow
ironic/drivers/modules/redfish (power, management, inspect).
"""

import os

import pytest
import requests
import sushy
from tests.functional.conformance import conftest
from tests.functional.conformance import validators
from tests.functional.emulator import harness

ON = sushy.SYSTEM_POWER_STATE_ON
OFF = sushy.SYSTEM_POWER_STATE_OFF
CONTINUOUS = sushy.BOOT_SOURCE_ENABLED_CONTINUOUS
DISABLED = sushy.BOOT_SOURCE_ENABLED_DISABLED
ONCE = sushy.BOOT_SOURCE_ENABLED_ONCE
GIB = 1024 ** 3


def _path(machine):
    return '/redfish/v1/Systems/%s' % machine.name


def _spec(sim, machine):
    return harness.vm(sim, machine.name)['spec']['template']['spec']


def _devices(sim, machine):
    return _spec(sim, machine)['domain']['devices']


def _orders(devices):
    """``{'disk': order, 'nic': order}`` of the seeded root disk and NIC."""
    return {'disk': devices['disks'][0].get('bootOrder'),
            'nic': devices['interfaces'][0].get('bootOrder')}


def _vmi_uid(sim, machine):
    vmi = harness.vmi(sim, machine.name)
    return vmi and vmi['metadata']['uid']


def power_poll(ironic, machine):
    """Ironic's sync_power_states per node: 4 x System + SecureBoot."""
    states = [ironic.get_system(_path(machine)).power_state
              for _ in range(4)]
    secure = ironic.get_system(_path(machine)).secure_boot.enabled
    return states[0], secure


def set_power(ironic, machine, reset_type, want, timeout=20.0):
    """Ironic's _set_power_state: read, reset, poll until ``want``."""
    ironic.get_system(_path(machine)).reset_system(reset_type)
    harness.wait_until(
        lambda: ironic.get_system(_path(machine)).power_state == want,
        timeout, 0.1, 'power state %s' % want)


def set_boot_device(ironic, machine, target, persistent):
    """Ironic's _set_boot_device: Enabled only when it must change."""
    system = ironic.get_system(_path(machine))
    enabled = CONTINUOUS if persistent else ONCE
    if system.boot.enabled == enabled:
        enabled = None
    system.set_system_boot_options(target, enabled=enabled)


def _boot(ironic, machine):
    boot = ironic.get_system(_path(machine)).boot
    return boot.target, boot.enabled


def test_power_poll_costs_no_api_call_once_warm(sim, ironic, machine):
    assert power_poll(ironic, machine) == (OFF, False)
    sim.request_log.clear()
    for _ in range(3):
        assert power_poll(ironic, machine) == (OFF, False)
    assert conftest.api_calls(sim) == []


def test_power_on_reboot_soft_reboot_soft_off_off(sim, ironic, machine):
    set_power(ironic, machine, sushy.RESET_ON, ON)
    assert harness.vmi(sim, machine.name)['status']['phase'] == 'Running'
    for reset_type in (sushy.RESET_FORCE_RESTART,
                       sushy.RESET_GRACEFUL_RESTART):
        before = _vmi_uid(sim, machine)
        ironic.get_system(_path(machine)).reset_system(reset_type)
        harness.wait_until(
            lambda: _vmi_uid(sim, machine) not in (None, before), 20, 0.1,
            'a new VMI after %s' % reset_type)
        set_power(ironic, machine, sushy.RESET_ON, ON)
    set_power(ironic, machine, sushy.RESET_GRACEFUL_SHUTDOWN, OFF)
    assert harness.vmi(sim, machine.name) is None
    set_power(ironic, machine, sushy.RESET_ON, ON)
    set_power(ironic, machine, sushy.RESET_FORCE_OFF, OFF)
    assert harness.vm(sim, machine.name)['spec']['runStrategy'] == 'Halted'


def test_boot_device_persistent(sim, ironic, machine):
    assert _boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_HDD,
                                      CONTINUOUS)
    set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_PXE, True)
    assert _boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_PXE,
                                      CONTINUOUS)
    assert _orders(_devices(sim, machine)) == {'disk': 2, 'nic': 1}
    # It persists across a power cycle and is what the VMI boots.
    set_power(ironic, machine, sushy.RESET_ON, ON)
    vmi_devices = harness.vmi(sim, machine.name)['spec']['domain'][
        'devices']
    assert _orders(vmi_devices) == {'disk': 2, 'nic': 1}
    set_power(ironic, machine, sushy.RESET_FORCE_OFF, OFF)
    assert _boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_PXE,
                                      CONTINUOUS)
    set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_HDD, True)
    assert _orders(_devices(sim, machine)) == {'disk': 1, 'nic': 2}


def test_boot_device_once(sim, ironic, machine):
    set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_PXE, False)
    assert _boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_PXE, ONCE)
    set_power(ironic, machine, sushy.RESET_ON, ON)
    vmi_devices = harness.vmi(sim, machine.name)['spec']['domain'][
        'devices']
    assert _orders(vmi_devices) == {'disk': 2, 'nic': 1}
    # Consumed by that boot: the persistent device is back, the
    # override Disabled (DSP0266).
    harness.wait_until(
        lambda: _boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_HDD,
                                           DISABLED),
        20, 0.1, 'the one-time boot consumed')
    assert _orders(_devices(sim, machine)) == {'disk': 1, 'nic': 2}
    set_power(ironic, machine, sushy.RESET_FORCE_OFF, OFF)


def test_boot_mode_and_secure_boot(sim, ironic, machine):
    system = ironic.get_system(_path(machine))
    assert system.boot.mode == sushy.BOOT_SOURCE_MODE_BIOS
    assert system.secure_boot.enabled is False
    set_boot_device(ironic, machine, sushy.BOOT_SOURCE_TARGET_PXE, True)
    # A separate PATCH with only the mode, as Ironic's set_boot_mode.
    ironic.get_system(_path(machine)).set_system_boot_options(
        mode=sushy.BOOT_SOURCE_MODE_UEFI)
    system = ironic.get_system(_path(machine))
    assert system.boot.mode == sushy.BOOT_SOURCE_MODE_UEFI
    assert (system.boot.target, system.boot.enabled) == (
        sushy.BOOT_SOURCE_TARGET_PXE, CONTINUOUS)
    assert 'efi' in _spec(sim, machine)['domain']['firmware']['bootloader']
    system.secure_boot.set_enabled(True)
    assert ironic.get_system(_path(machine)).secure_boot.enabled is True
    domain = _spec(sim, machine)['domain']
    assert domain['firmware']['bootloader']['efi']['secureBoot'] is True
    assert domain['features']['smm']['enabled'] is True
    ironic.get_system(_path(machine)).secure_boot.set_enabled(False)
    ironic.get_system(_path(machine)).set_system_boot_options(
        mode=sushy.BOOT_SOURCE_MODE_BIOS)
    system = ironic.get_system(_path(machine))
    assert system.boot.mode == sushy.BOOT_SOURCE_MODE_BIOS
    assert system.secure_boot.enabled is False
    assert 'bios' in _spec(sim, machine)['domain']['firmware']['bootloader']


def _local_gb(system):
    """Ironic's RedfishInspect._detect_local_gb, in short."""
    sizes = []
    for getter in (lambda: system.simple_storage.disks_sizes_bytes,
                   lambda: system.storage.volumes_sizes_bytes,
                   lambda: system.storage.drives_sizes_bytes):
        try:
            sizes += [s for s in getter() or () if s >= 4 * GIB]
        except sushy.exceptions.SushyError:
            pass
    return max(0, int(min(sizes) / GIB - 1)) if sizes else 0


def test_inspection_matches_the_vm(sim, ironic, machine):
    system = ironic.get_system(_path(machine))
    spec = _spec(sim, machine)
    cpu = spec['domain']['cpu']
    cpus = cpu['cores'] * cpu['sockets'] * cpu['threads']
    assert system.memory_summary.size_gib * 1024 == 2048
    assert system.processors.summary == (cpus, sushy.PROCESSOR_ARCH_x86)
    members = system.processors.get_members()
    assert members and all(p.identity for p in members)
    assert _local_gb(system) == 10 - 1
    macs = system.ethernet_interfaces.summary
    want = {i['macAddress'].lower(): sushy.STATE_ENABLED
            for i in spec['domain']['devices']['interfaces']}
    assert {m.lower(): s for m, s in macs.items()} == want


def test_ethernet_macs_while_running(sim, ironic, machine):
    set_power(ironic, machine, sushy.RESET_ON, ON)
    macs = ironic.get_system(_path(machine)).ethernet_interfaces.summary
    spec = _spec(sim, machine)
    assert sorted(m.lower() for m in macs) == sorted(
        i['macAddress'].lower()
        for i in spec['domain']['devices']['interfaces'])
    set_power(ironic, machine, sushy.RESET_FORCE_OFF, OFF)


def test_bad_boot_input_is_4xx_and_changes_nothing(sim, emulator,
                                                   machine):
    before = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    url = emulator.url + '/redfish/v1/Systems/' + machine.uuid
    for body in ({'Boot': {'BootSourceOverrideTarget': 'Usb'}},
                 {'Boot': {'BootSourceOverrideMode': 'Bogus'}},
                 {'Boot': {'BootSourceOverrideEnabled': 'Always'}},
                 {'UUID': 'x'}, ['Boot']):
        response = requests.patch(url, json=body, timeout=30)
        assert 400 <= response.status_code < 500, (body, response.text)
    response = requests.patch(url, data='{"Boot": ', timeout=30,
                              headers={'Content-Type': 'application/json'})
    assert 400 <= response.status_code < 500, response.text
    after = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    assert after == before


def test_unknown_system_is_404(emulator):
    url = emulator.url + '/redfish/v1/Systems/'
    for ident in ('no-such-vm', '00000000-0000-0000-0000-000000000000'):
        assert requests.get(url + ident, timeout=30).status_code == 404
        response = requests.patch(url + ident, timeout=30, json={
            'Boot': {'BootSourceOverrideTarget': 'Pxe'}})
        assert response.status_code == 404, response.text
        response = requests.post(
            url + ident + '/Actions/ComputerSystem.Reset',
            json={'ResetType': 'On'}, timeout=30)
        assert response.status_code == 404, response.text


@pytest.mark.validator
def test_interop_validator_with_ironic_profile(sim, emulator, machine,
                                               tmp_path):
    """Ironic's interop profile: no FAIL."""
    validators.require(validators.tool('rf_interop_validator'),
                       'redfish-interop-validator not installed (tox -e '
                       'validator)')
    profile = os.environ.get(validators.PROFILE_ENV, '')
    validators.require(os.path.isfile(profile), '%s does not name Ironic\'s '
                       'interop profile (tox -e validator fetches it from '
                       'PyPI)' % validators.PROFILE_ENV)
    run = validators.interop_validator(emulator.url, tmp_path / 'ours',
                                       profile)
    print('interop: %d FAIL, %d WARN' % (len(run.fails), len(run.warns)))
    print(validators.report(run.fails + run.warns))
    assert machine.path in run.validated
    assert not run.fails, validators.report(run.fails)
