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

"""BootProgress of a System, read with sushy as Ironic reads it.

Ironic's BIOS interface waits, after the reboot that applies BIOS
settings, until ``BootProgress.LastState`` is ``OSBootStarted`` or
``OSRunning`` and then checks the attributes (``redfish/bios.py``).
"""

from dateutil import parser
import pytest
import requests
import sushy
from tests import backend
from tests.functional.emulator import conftest
from tests.functional.emulator import harness

from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator.virt import model

STATES = sushy.BootProgressStates
#: What Ironic's redfish BIOS interface waits for.
BOOTED = {STATES.OS_BOOT_STARTED, STATES.OS_RUNNING}
NO_AGENT = 'no-agent'


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(
        vms=6, guest_agent=True,
        stage_delays=dict(conftest.FAST, AgentConnected=0.2))
    try:
        yield simulator
    finally:
        simulator.stop()


def _progress(redfish, machine):
    return redfish.get_system(machine.path).boot_progress


def _vmi(sim, name):
    return harness.vmi(sim, name) or {}


def _wait_state(redfish, machine, state, seen=None):
    def reached():
        current = _progress(redfish, machine)
        if seen is not None:
            seen.add(current.last_state)
        return current if current.last_state == state else None
    return harness.wait_until(reached, 60, what='BootProgress %s' % state)


def _phase_time(vmi, phase):
    return [t['phaseTransitionTimestamp']
            for t in vmi['status']['phaseTransitionTimestamps']
            if t['phase'] == phase][-1]


def _agent(vmi):
    return [c for c in vmi['status'].get('conditions') or ()
            if c['type'] == 'AgentConnected']


def test_boot_progress_follows_each_boot(sim, emulator, redfish, machine):
    system = redfish.get_system(machine.path)
    assert system.boot_progress.last_state == STATES.NONE, 'off'
    assert system.boot_progress.last_state_updated_at is None
    url = emulator.url + machine.path
    etag = requests.get(url).headers['ETag']

    seen = set()
    system.reset_system(sushy.RESET_ON)
    running = _wait_state(redfish, machine, STATES.OS_RUNNING, seen)
    vmi = _vmi(sim, machine.name)
    assert running.last_state_updated_at == parser.parse(
        _agent(vmi)[0]['lastProbeTime']), "the VMI's own time"
    answer = requests.get(url)
    assert answer.headers['ETag'] != etag, 'a kept GET is not reused'
    assert answer.json()['BootProgress']['LastState'] == 'OSRunning'

    first = vmi['metadata']['uid']
    system.reset_system(sushy.RESET_FORCE_RESTART)

    def new_boot():
        current = _progress(redfish, machine)
        seen.add(current.last_state)
        uid = _vmi(sim, machine.name).get('metadata', {}).get('uid')
        return uid not in (None, first) and \
            current.last_state == STATES.OS_RUNNING
    harness.wait_until(new_boot, 60, what='a new boot running')
    assert seen <= {STATES.NONE} | BOOTED, seen

    system.reset_system(sushy.RESET_FORCE_OFF)
    _wait_state(redfish, machine, STATES.NONE)


def _no_agent_vm(sim):
    vm = objects.make_vm(NO_AGENT, data_volume=False, run_strategy='Always')
    vm['spec']['template']['metadata']['annotations'] = {
        model.ANN_GUEST_AGENT: 'false'}
    status, body = backend.admin_request(
        sim, 'POST', '/apis/kubevirt.io/v1/namespaces/default/'
        'virtualmachines', vm)
    assert status == 201, body
    return conftest.Machine(sim, NO_AGENT)


def test_without_a_guest_agent_it_stays_os_boot_started(sim, emulator,
                                                        redfish):
    machine = _no_agent_vm(sim)
    harness.wait_until(lambda: (_vmi(sim, NO_AGENT).get('status') or {})
                       .get('phase') == 'Running', 60, what='Running')
    progress = _wait_state(redfish, machine, STATES.OS_BOOT_STARTED)
    vmi = _vmi(sim, NO_AGENT)
    assert not _agent(vmi)
    assert progress.last_state_updated_at == parser.parse(
        _phase_time(vmi, 'Running'))


def test_bios_settings_read_applied_once_booted(sim, emulator, redfish,
                                                machine):
    """Ironic's wait after apply_configuration, with and without agent."""
    system = redfish.get_system(machine.path)
    system.reset_system(sushy.RESET_ON)
    _wait_state(redfish, machine, STATES.OS_RUNNING)
    first = _vmi(sim, machine.name)['metadata']['uid']
    system.bios.set_attributes({'ProcTurboMode': 'Disabled'},
                               apply_time=sushy.APPLY_TIME_ON_RESET)
    system.reset_system(sushy.RESET_FORCE_RESTART)
    # The restart applied the settings; the boot that was running cannot
    # show them done: from the reset's answer on it reads None.
    assert _progress(redfish, machine).last_state == STATES.NONE or \
        _vmi(sim, machine.name)['metadata']['uid'] != first

    def ironic_sees_it_done():
        current = redfish.get_system(machine.path)
        state = current.boot_progress.last_state
        if state not in BOOTED:
            return None
        return current.bios.attributes['ProcTurboMode'] == 'Disabled'
    harness.wait_until(ironic_sees_it_done, 60, what='BIOS applied')
    assert _vmi(sim, machine.name)['metadata']['uid'] != first, \
        'applied by the new boot'
    system.reset_system(sushy.RESET_FORCE_OFF)
