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

"""Boot device, once/continuous, boot mode and secure boot."""

import requests
import sushy
from tests.functional.emulator import harness

PXE = sushy.BOOT_SOURCE_TARGET_PXE
HDD = sushy.BOOT_SOURCE_TARGET_HDD
CD = sushy.BOOT_SOURCE_TARGET_CD
ONCE = sushy.BOOT_SOURCE_ENABLED_ONCE
CONTINUOUS = sushy.BOOT_SOURCE_ENABLED_CONTINUOUS
DISABLED = sushy.BOOT_SOURCE_ENABLED_DISABLED


def _devices(sim, machine):
    devices = harness.vm(sim, machine.name)['spec']['template']['spec'][
        'domain']['devices']
    return {d['name']: d.get('bootOrder')
            for d in devices['disks'] + devices['interfaces']}


def _boot(redfish, machine):
    return redfish.get_system(machine.path).boot


def _wait_power(system, state):
    def reached():
        system.refresh()
        return system.power_state == state
    harness.wait_until(reached, 20, what='power %s' % state)


def test_continuous_pxe_survives_a_boot(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    assert (system.boot.target, system.boot.enabled) == (HDD, CONTINUOUS)
    system.set_system_boot_options(PXE, enabled=CONTINUOUS)
    assert _devices(sim, machine) == {'root': 2, 'default': 1}
    system.reset_system(sushy.RESET_ON)
    _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)
    boot = _boot(redfish, machine)
    assert (boot.target, boot.enabled) == (PXE, CONTINUOUS)
    system.reset_system(sushy.RESET_FORCE_OFF)


def test_once_is_consumed_by_the_next_boot(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    system.set_system_boot_options(PXE, enabled=ONCE)
    boot = _boot(redfish, machine)
    assert (boot.target, boot.enabled) == (PXE, ONCE)
    assert _devices(sim, machine) == {'root': 2, 'default': 1}
    system.reset_system(sushy.RESET_ON)
    _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)
    # The VMI was built with Pxe first; the VM is restored afterwards.
    assert harness.vmi(sim, machine.name)['spec']['domain']['devices'][
        'interfaces'][0]['bootOrder'] == 1
    harness.wait_until(lambda: _devices(sim, machine) ==
                       {'root': 1, 'default': 2}, 10, what='restored order')
    boot = _boot(redfish, machine)
    assert (boot.target, boot.enabled) == (HDD, DISABLED)
    system.reset_system(sushy.RESET_FORCE_OFF)


def test_enabled_alone_and_disabled(sim, emulator, redfish, machine):
    url = emulator.url + machine.path
    system = redfish.get_system(machine.path)
    system.set_system_boot_options(PXE, enabled=ONCE)
    response = requests.patch(url, json={'Boot': {
        'BootSourceOverrideEnabled': 'Continuous'}})
    assert response.status_code == 204
    boot = _boot(redfish, machine)
    assert (boot.target, boot.enabled) == (PXE, CONTINUOUS)
    system.set_system_boot_options(HDD, enabled=ONCE)
    assert _boot(redfish, machine).enabled == ONCE
    response = requests.patch(url, json={'Boot': {
        'BootSourceOverrideEnabled': 'Disabled'}})
    assert response.status_code == 204
    boot = _boot(redfish, machine)
    assert (boot.target, boot.enabled) == (PXE, DISABLED)
    assert _devices(sim, machine) == {'root': 2, 'default': 1}


def test_bad_boot_requests_change_nothing(sim, emulator, machine):
    url = emulator.url + machine.path
    before = harness.vm(sim, machine.name)
    for body in ({'Boot': {'BootSourceOverrideTarget': 'Usb'}},
                 {'Boot': {'BootSourceOverrideTarget': 'Pxe',
                           'BootSourceOverrideMode': 'Bios'}},
                 {'Boot': {'BootSourceOverrideMode': 'UEFI'},
                  'PowerState': 'On'},
                 {'Boot': {}}):
        response = requests.patch(url, json=body)
        assert response.status_code == 400, (body, response.text)
    assert harness.vm(sim, machine.name) == before


def test_boot_mode_and_secure_boot(sim, emulator, redfish, machine):
    system = redfish.get_system(machine.path)
    assert system.boot.mode == sushy.BOOT_SOURCE_MODE_BIOS
    secure = requests.patch(emulator.url + machine.path + '/SecureBoot',
                            json={'SecureBootEnable': True})
    assert secure.status_code == 400
    assert 'UEFI' in secure.json()['error']['message']
    system.set_system_boot_options(mode=sushy.BOOT_SOURCE_MODE_UEFI)
    system = redfish.get_system(machine.path)
    assert system.boot.mode == sushy.BOOT_SOURCE_MODE_UEFI
    assert 'UefiHttp' in system.boot.allowed_values
    assert not system.secure_boot.enabled
    system.secure_boot.set_enabled(True)
    assert redfish.get_system(machine.path).secure_boot.enabled
    domain = harness.vm(sim, machine.name)['spec']['template']['spec'][
        'domain']
    assert domain['firmware']['bootloader'] == {'efi': {'secureBoot': True}}
    assert domain['features']['smm'] == {'enabled': True}
    system.set_system_boot_options(mode=sushy.BOOT_SOURCE_MODE_BIOS)
    system = redfish.get_system(machine.path)
    assert system.boot.mode == sushy.BOOT_SOURCE_MODE_BIOS
    assert not system.secure_boot.enabled


def test_mode_change_shows_restart_required(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)
    system.set_system_boot_options(mode=sushy.BOOT_SOURCE_MODE_UEFI)

    def restart_required():
        conditions = harness.vm(sim, machine.name)['status'].get(
            'conditions', [])
        return any(c['type'] == 'RestartRequired' and c['status'] == 'True'
                   for c in conditions)
    harness.wait_until(restart_required, 10, what='RestartRequired')
    assert 'efi' not in harness.vmi(sim, machine.name)['spec']['domain'][
        'firmware'].get('bootloader', {})
    system.reset_system(sushy.RESET_FORCE_OFF)


def test_an_unset_http_boot_uri_reads_null(emulator, machine):
    url = emulator.url + machine.path
    response = requests.patch(url, json={
        'Boot': {'BootSourceOverrideMode': 'UEFI'}})
    assert response.status_code == 204, response.text
    body = requests.get(url).json()
    # HttpBootUri is shown in UEFI mode only.
    assert body['Boot']['BootSourceOverrideMode'] == 'UEFI'
    assert body['Boot']['HttpBootUri'] is None


def test_cd_with_no_media_is_accepted_and_falls_through(sim, redfish,
                                                        machine):
    """As on a BMC with an empty tray: Cd is kept, the boot goes on."""
    system = redfish.get_system(machine.path)
    assert CD in system.get_allowed_system_boot_source_values()
    before = _devices(sim, machine)
    for enabled in (ONCE, CONTINUOUS):
        system.set_system_boot_options(CD, enabled=enabled)
        boot = _boot(redfish, machine)
        assert (boot.target, boot.enabled) == (CD, enabled)
        assert _devices(sim, machine) == before
    system.reset_system(sushy.RESET_ON)
    _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)
    assert _boot(redfish, machine).target == CD
    system.set_system_boot_options(HDD, enabled=CONTINUOUS)
    assert _boot(redfish, machine).target == HDD
    assert _devices(sim, machine) == before
    system.reset_system(sushy.RESET_FORCE_OFF)
