"""Power through sushy against the in-process emulator and the simulator."""

import requests
import sushy
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


def _writes(sim):
    return [e for e in harness.api_calls(sim)
            if e['method'] not in ('GET',)]


def test_on_then_force_off(sim, redfish, machine):
    system = redfish.get_system(machine.path)
    assert system.power_state == OFF
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    assert harness.vmi(sim, machine.name)['status']['phase'] == 'Running'
    system.reset_system(sushy.RESET_FORCE_OFF)
    _wait_state(system, OFF)
    assert harness.vmi(sim, machine.name) is None


def test_on_when_on_makes_no_api_call(sim, emulator, redfish, machine):
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_state(system, ON)
    sim.request_log.clear()
    assert _reset(emulator, machine, 'On').status_code == 204
    assert _reset(emulator, machine, 'ForceOn').status_code == 204
    assert _writes(sim) == []
    _reset(emulator, machine, 'ForceOff')
    _wait_state(system, OFF)
    sim.request_log.clear()
    for reset_type in ('ForceOff', 'GracefulShutdown'):
        assert _reset(emulator, machine, reset_type).status_code == 204
    assert _writes(sim) == []
