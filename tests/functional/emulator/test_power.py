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

"""Power through sushy against the in-process emulator and the simulator."""

import requests
import sushy
from tests import backend
from tests.functional.emulator import harness

ON = sushy.SYSTEM_POWER_STATE_ON
OFF = sushy.SYSTEM_POWER_STATE_OFF


def _state(system):
    system.refresh()
    return system.power_state


def _wait_state(system, state, timeout=20.0):
    harness.wait_until(lambda: _state(system) == state, timeout,
                       what='power state %s' % state)


def _reset(emulator, machine, reset_type):
    return requests.post(
        emulator.url + machine.path + '/Actions/ComputerSystem.Reset',
        json={'ResetType': reset_type}, timeout=30)


def test_on_then_force_off(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    assert system.power_state == OFF
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    assert harness.vmi(sim, machine.name)['status']['phase'] == 'Running'
    system.reset_system(sushy.RESET_FORCE_OFF)
    _wait_state(system, OFF)
    # Off once the VMI has stopped; virt-controller then deletes it.
    harness.wait_until(lambda: harness.vmi(sim, machine.name) is None, 20,
                       what='the stopped VMI deleted')


def _calls(sim):
    """API calls so far (a sentinel request makes the log complete)."""
    backend.log_complete(sim)
    return ['%s %s' % (e['method'], e['resource'])
            for e in harness.api_calls(sim) if e['path'] != '/version']


def _noop_calls(sim, emulator, machine, reset_types):
    """The API calls of no-op ``reset_types`` made on a caught-up cache.

    A controller's status write that trails the power change (the VM's
    conditions after its VMI's) can land between the catch-up and the
    reset; the resets are then made again, at most 5 times.
    """
    expected = ['GET virtualmachines'] * len(reset_types)
    for _ in range(5):
        harness.wait_caught_up(sim, emulator.url + machine.path,
                               machine.name)
        sim.request_log.clear()
        for reset_type in reset_types:
            assert _reset(emulator, machine, reset_type).status_code == 204
        calls = _calls(sim)
        if calls == expected:
            break
    return calls


def test_on_when_on_makes_one_get_and_no_write(sim, emulator, redfish,
                                               machine):
    """A no-op reset is confirmed by 1 live GET of the VM, never a write.

    The cache may lag another process's power change; the live VM's
    resourceVersion equal to the cached one confirms the no-op.
    """
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    assert _noop_calls(sim, emulator, machine, ('On', 'ForceOn')) == \
        ['GET virtualmachines'] * 2
    _reset(emulator, machine, 'ForceOff')
    _wait_state(system, OFF)
    assert _noop_calls(sim, emulator, machine,
                       ('ForceOff', 'GracefulShutdown')) == \
        ['GET virtualmachines'] * 2


def _error(response, status):
    assert response.status_code == status, response.text
    return response.json()['error']['message']


def test_graceful_shutdown_waits_force_off_does_not(sim, emulator, redfish,
                                                    machine):
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    grace = harness.vmi(sim, machine.name)['spec'][
        'terminationGracePeriodSeconds']
    assert grace == 180
    system.reset_system(sushy.RESET_GRACEFUL_SHUTDOWN)
    # The client reads its own reset at once; virt-controller deletes the
    # VMI a little later.
    assert _state(system) == sushy.SYSTEM_POWER_STATE_POWERING_OFF
    _wait_deleting(sim, machine)
    # Ironic maps PoweringOff to "off" and may power on at once: 409 with
    # the message id Ironic retries (power_on_conflict_retry_attempts).
    response = _reset(emulator, machine, 'On')
    _error(response, 409)
    assert response.json()['error']['code'].endswith(
        '.ActionParameterValueConflict')
    # ForceOff shortens the grace period of the stop in progress.
    system.reset_system(sushy.RESET_FORCE_OFF)
    _wait_state(system, OFF, timeout=15)


def test_nmi_and_unknown_reset_types_are_400(sim, emulator, machine):
    before = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    response = _reset(emulator, machine, 'Nmi')
    assert 'Nmi' in _error(response, 400)
    assert response.json()['error']['code'].endswith(
        '.ActionParameterNotSupported')
    assert 'Unknown ResetType' in _error(
        _reset(emulator, machine, 'Explode'), 400)
    response = requests.post(
        emulator.url + machine.path + '/Actions/ComputerSystem.Reset',
        json={}, timeout=30)
    assert 'ResetType' in _error(response, 400)
    assert response.json()['error']['code'].endswith(
        '.ActionParameterMissing')
    assert harness.vm(sim, machine.name)['metadata'][
        'resourceVersion'] == before


def _wait_deleting(sim, machine):
    """The VMI, once virt-controller has begun deleting it."""
    def deleting():
        vmi = harness.vmi(sim, machine.name)
        return vmi if (vmi or {}).get('metadata', {}).get(
            'deletionTimestamp') else None
    return harness.wait_until(deleting, 20, 0.05, what='VMI deleting')


def _uid(sim, machine):
    vmi = harness.vmi(sim, machine.name)
    return vmi and vmi['metadata']['uid']


def test_restarts(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    # A restart of an Off system starts it.
    system.reset_system(sushy.RESET_FORCE_RESTART)
    _wait_state(system, ON)
    first = _uid(sim, machine)
    system.reset_system(sushy.RESET_FORCE_RESTART)
    harness.wait_until(lambda: _uid(sim, machine) not in (None, first),
                       20, what='a new VMI')
    _wait_state(system, ON)
    # No guest agent: GracefulRestart is a restart that gives the guest
    # its grace period (180 s) to shut down.
    system.reset_system(sushy.RESET_GRACEFUL_RESTART)
    assert _state(system) == sushy.SYSTEM_POWER_STATE_POWERING_OFF
    vmi = _wait_deleting(sim, machine)
    assert vmi['spec']['terminationGracePeriodSeconds'] == 180


def test_force_off_during_graceful_restart_ends_off(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    vmi_uid = _uid(sim, machine)
    system.reset_system(sushy.RESET_GRACEFUL_RESTART)
    system.reset_system(sushy.RESET_FORCE_OFF)
    harness.wait_until(lambda: harness.vmi(sim, machine.name) is None or
                       harness.vmi(sim, machine.name)['metadata']['uid'] !=
                       vmi_uid, 15, what='VMI replaced or gone')
    _wait_state(system, OFF)
    assert harness.vm(sim, machine.name)['spec']['runStrategy'] == 'Halted'
    # virt-controller clears the Stop request once the VMI is gone; on a
    # real API server that status write can come after the emulator's
    # watch has seen the VMI go.
    harness.wait_until(
        lambda: not harness.vm(sim, machine.name)['status'].get(
            'stateChangeRequests'), 15, what='the stop request cleared')
    assert harness.vm(sim, machine.name)['spec']['runStrategy'] == 'Halted'


def test_force_restart_while_powering_off_power_cycles(sim, redfish,
                                                       machine):
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    first = _uid(sim, machine)
    # A graceful shutdown that would take the guest's 180 s...
    system.reset_system(sushy.RESET_GRACEFUL_SHUTDOWN)
    assert _state(system) == sushy.SYSTEM_POWER_STATE_POWERING_OFF
    # ... cut short by an immediate power cycle: a fresh VMI, On.
    system.reset_system(sushy.RESET_FORCE_RESTART)
    harness.wait_until(lambda: _uid(sim, machine) not in (None, first),
                       15, what='a new VMI')
    _wait_state(system, ON, timeout=10)
    assert harness.vm(sim, machine.name)['spec']['runStrategy'] == 'Always'


def test_push_power_button_toggles(sim, emulator, redfish, machine):
    system = redfish.get_system(machine.path)
    assert _reset(emulator, machine, 'PushPowerButton').status_code == 204
    _wait_state(system, ON)
    assert _reset(emulator, machine, 'PushPowerButton').status_code == 204
    assert _state(system) == sushy.SYSTEM_POWER_STATE_POWERING_OFF
    system.reset_system(sushy.RESET_FORCE_OFF)
    _wait_state(system, OFF, timeout=15)
