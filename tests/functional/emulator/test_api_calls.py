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

"""Kubernetes API calls per Redfish operation, from the request log."""

import collections

import requests
import sushy
from tests import backend
from tests.functional.emulator import harness


def _calls(sim, action, effective=False):
    """The calls ``action`` made (``effective``: the writes answered 2xx)."""
    sim.request_log.clear()
    action()
    return collections.Counter(
        '%s %s' % (e['verb'], e['resource'])
        for e in harness.api_calls(sim) if e['verb'] != 'list' and (
            not effective or e['verb'] != 'get' and e['status'] < 300))


def test_api_calls_per_operation(sim, emulator, redfish, machine, capsys):
    url = emulator.url + machine.path
    system = redfish.get_system(machine.path)

    def power(reset_type, state, once_restored=False):
        def act():
            system.reset_system(reset_type)

            def reached():
                # The Once restore is written after the boot (an
                # asynchronous PATCH): the step lasts until it is seen.
                system.refresh()
                return system.power_state == state and (
                    not once_restored or system.boot.enabled
                    != sushy.BOOT_SOURCE_ENABLED_ONCE)
            harness.wait_until(reached, 20, what=state)
        return act

    def boot_once():
        system.set_system_boot_options(sushy.BOOT_SOURCE_TARGET_PXE,
                                       enabled=sushy.BOOT_SOURCE_ENABLED_ONCE)

    table = [
        ('GET System', lambda: requests.get(url), {}),
        ('GET System x10 (power poll)',
         lambda: [requests.get(url) for _ in range(10)], {}),
        ('PATCH Boot Pxe Continuous', lambda: requests.patch(url, json={
            'Boot': {'BootSourceOverrideTarget': 'Pxe'}}),
         {'patch virtualmachines': 1}),
        ('PATCH Boot Pxe again (no change)', lambda: requests.patch(
            url, json={'Boot': {'BootSourceOverrideTarget': 'Pxe'}}), {}),
        ('PATCH Boot Hdd Once', lambda: requests.patch(url, json={
            'Boot': {'BootSourceOverrideTarget': 'Hdd',
                     'BootSourceOverrideEnabled': 'Once'}}),
         {'patch virtualmachines': 1}),
        ('Reset On + poll until On (+ Once restore)',
         power(sushy.RESET_ON, sushy.SYSTEM_POWER_STATE_ON, True),
         {'get virtualmachines': 2, 'update virtualmachines/start': 1,
          'patch virtualmachines': 1}),
        ('Reset On when On', lambda: requests.post(
            url + '/Actions/ComputerSystem.Reset', json={'ResetType': 'On'}),
         {'get virtualmachines': 1}),
        ('Reset ForceRestart + poll',
         power(sushy.RESET_FORCE_RESTART, sushy.SYSTEM_POWER_STATE_ON),
         {'get virtualmachines': 2, 'update virtualmachines/restart': 1}),
        ('Reset ForceOff + poll until Off',
         power(sushy.RESET_FORCE_OFF, sushy.SYSTEM_POWER_STATE_OFF),
         {'get virtualmachines': 2, 'update virtualmachines/stop': 1}),
        ('PATCH BootSourceOverrideMode UEFI', lambda: requests.patch(
            url, json={'Boot': {'BootSourceOverrideMode': 'UEFI'}}),
         {'patch virtualmachines': 1}),
        ('sushy set_system_boot_options Pxe Once', boot_once,
         {'patch virtualmachines': 1}),
    ]
    lines = []
    for label, action, expected in table:
        harness.wait_caught_up(sim, url, machine.name)
        if backend.REAL:
            # The simulated VM controller writes the VM's status over the
            # API, racing the emulator's cache: how many reads confirm a
            # plan, and how many guarded patches conflict, varies. The
            # writes that took effect do not.
            calls = _calls(sim, action, effective=True)
            lines.append('%-42s %s' % (label, dict(calls) or 0))
            assert dict(+calls) == {k: v for k, v in expected.items()
                                    if not k.startswith('get ')}, label
            continue
        calls = _calls(sim, action)
        lines.append('%-42s %s' % (label, dict(calls) or 0))
        # The VM controller writes VM status around power transitions; a
        # guarded patch computed from a cache that has not seen that write
        # yet conflicts, re-reads the VM (GET) and patches again. A start,
        # a no-op reset or a stop of an Always VM reads the VM live once,
        # and a start, stop or restart reads it once after (expected).
        retries = calls['get virtualmachines'] - expected.get(
            'get virtualmachines', 0)
        assert calls['patch virtualmachines'] - retries == expected.get(
            'patch virtualmachines', 0), label
        calls['patch virtualmachines'] -= retries
        calls['get virtualmachines'] -= retries
        assert dict(+calls) == expected, label
    with capsys.disabled():
        print('\nKubernetes API calls per Redfish operation:')
        print('\n'.join(lines))
