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

"""Every reset type, per run strategy and tray state: no 204 for nothing.

A reset answers 204 and the System reaches the state asked for (or was
in it already), or answers 409 and changes nothing. Stopped VMs are
tried with an empty tray, an import in progress (held for the test) and
a failed import; running VMs with both ``rebootPolicy`` values.
"""

import pytest
from tests import backend
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import virt

VMS = 64
#: The import never ends while the module runs; shutdowns are quick.
DELAYS = dict(conftest.DELAYS, ImportInProgress=3600.0, Shutdown=0.2)
STOPPED = ('Halted', 'Manual', 'RerunOnFailure', 'Once')
RUNNING = ('Always', 'Manual', 'RerunOnFailure', 'Once')
STARTS = ('On', 'ForceOn', 'PushPowerButton', 'GracefulRestart',
          'ForceRestart')
STOPS = ('ForceOff', 'GracefulShutdown')


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=VMS, stage_delays=DELAYS, guest_agent=True)
    try:
        yield simulator
    finally:
        simulator.stop()


def _edit(machine, change):
    """A user's edit of the VM (as kubectl edit would)."""
    machine.sim.store.mutate(virt.VM_RT, 'default', machine.name, change)


def _vmi(machine):
    return harness.vmi(machine.sim, machine.name)


def _phase(machine):
    return ((_vmi(machine) or {}).get('status') or {}).get('phase')


def _guest_ends(machine, phase='Succeeded'):
    """The guest powers itself off (``phase`` Succeeded) or crashes."""
    machine.sim.guest_ends('default', machine.name, phase)


def _set_strategy(machine, strategy):
    _edit(machine, lambda vm: vm['spec'].update(runStrategy=strategy))


def _wait_running(machine, agent=False):
    def running():
        vmi = _vmi(machine)
        return vmi if _phase(machine) == 'Running' and (
            not agent or virt.condition(vmi, 'AgentConnected')) else None
    return harness.wait_until(running, 20, 0.05, 'VMI running')


def _power(machine):
    return harness.wait_caught_up(machine.sim, machine.url(machine.path),
                                  machine.name).json()['PowerState']


def _wait_power(machine, state):
    harness.wait_until(lambda: _power(machine) == state, 20, 0.05,
                       'PowerState %s' % state)


def _stop(machine, strategy):
    """``machine`` stopped with run strategy ``strategy``."""
    if strategy == 'Halted':
        return
    _set_strategy(machine, strategy)
    if strategy == 'Manual':
        return
    _wait_running(machine)
    _guest_ends(machine)
    if strategy == 'RerunOnFailure':
        harness.wait_until(lambda: _vmi(machine) is None, 20, 0.05,
                           'the finished VMI deleted')
    harness.wait_until(
        lambda: machine.vm()['status'].get('printableStatus') == 'Stopped',
        20, 0.05, 'Stopped')


def _fill(machine, images, tray):
    if tray == 'importing':
        assert machine.insert(images.add('%s.iso' % machine.name)) \
            .status_code == 204
        machine.wait_phase('ImportInProgress')
    elif tray == 'failed':
        assert machine.insert(images.url('%s-missing.iso' % machine.name)) \
            .status_code == 204
        harness.wait_until(lambda: media.import_error(machine.dv() or {}),
                           20, 0.05, 'the import failed')


def _snapshot(machine):
    vm, vmi = machine.vm(), _vmi(machine)
    return (vm['spec'], vm['status'].get('stateChangeRequests'),
            vmi and vmi['metadata']['uid'])


def _no_change(machine, reset_type, status):
    before = _snapshot(machine)
    answer = machine.reset(reset_type)
    assert answer.status_code == status, (reset_type, answer.text)
    assert _power(machine) == 'Off', reset_type
    assert _snapshot(machine) == before, reset_type
    return answer


@pytest.mark.parametrize('tray', ['importing', 'failed'])
@pytest.mark.parametrize('strategy', STOPPED)
def test_stopped_with_a_tray_not_ready(machine, images, strategy, tray):
    """Off, not PoweringOn; a start is a 409 naming the tray."""
    _stop(machine, strategy)
    _fill(machine, images, tray)
    harness.wait_until(
        lambda: machine.vm()['status']['printableStatus'] in (
            'Provisioning', 'DataVolumeError'), 20, 0.05,
        'the stopped VM waiting for its tray')
    assert _power(machine) == 'Off'
    for reset_type in STOPS:
        _no_change(machine, reset_type, 204)
    for reset_type in STARTS:
        answer = _no_change(machine, reset_type, 409)
        assert 'virtual media' in answer.json()['error']['message'], \
            reset_type


@pytest.mark.parametrize('reset_type', STARTS)
@pytest.mark.parametrize('strategy', STOPPED)
def test_stopped_starts(machine, strategy, reset_type):
    _stop(machine, strategy)
    assert _power(machine) == 'Off'
    for stop in STOPS:
        _no_change(machine, stop, 204)
    assert machine.reset(reset_type).status_code == 204
    _wait_power(machine, 'On')


def _start(machine, strategy, policy=None):
    """``machine`` running with ``strategy``, its guest agent connected."""
    if policy:
        _edit(machine, lambda vm: vm['spec']['template']['spec'][
            'domain'].update(rebootPolicy=policy))
    _set_strategy(machine, 'Always' if strategy == 'Manual' else strategy)
    vmi = _wait_running(machine, agent=True)
    if strategy == 'Manual':
        # A Manual VM running: started, then switched to Manual.
        _set_strategy(machine, 'Manual')
    _wait_power(machine, 'On')
    return vmi['metadata']['uid']


@pytest.mark.parametrize('policy', ['Reboot', 'Terminate'])
@pytest.mark.parametrize('strategy', RUNNING)
def test_graceful_restart_comes_back_on(machine, strategy, policy):
    uid = _start(machine, strategy, policy)
    assert machine.reset('GracefulRestart').status_code == 204
    if policy == 'Terminate':
        # A new VMI: the guest's reboot ended the old one (Always), or a
        # restart (the others would end Off).
        harness.wait_until(
            lambda: (_vmi(machine) or {}).get('metadata', {}).get('uid')
            not in (None, uid), 20, 0.05, 'a new VMI')
    _wait_running(machine, agent=True)
    _wait_power(machine, 'On')
    # A restart of a Once VM makes it Always (virt-api refuses Once's).
    assert machine.vm()['spec']['runStrategy'] == (
        'Always' if (strategy, policy) == ('Once', 'Terminate')
        else strategy)


@pytest.mark.parametrize('reset_type', STOPS)
@pytest.mark.parametrize('strategy', RUNNING)
def test_stop_ends_off(machine, strategy, reset_type):
    _start(machine, strategy)
    assert machine.reset(reset_type).status_code == 204
    # Every run strategy's stop ends with the VMI deleted (virt-controller
    # deletes a finished one after its shutdown).
    harness.wait_until(lambda: _vmi(machine) is None, 20, 0.05,
                       'the VMI deleted')
    harness.wait_until(
        lambda: not machine.vm()['status'].get('stateChangeRequests'), 20,
        0.05, 'no state change pending')
    _wait_power(machine, 'Off')
    # virt-api keeps Manual and RerunOnFailure (a Stop request); Always
    # and Once become Halted.
    assert machine.vm()['spec']['runStrategy'] == (
        strategy if strategy in ('Manual', 'RerunOnFailure') else 'Halted')
    for again in STOPS:
        _no_change(machine, again, 204)
    assert machine.reset('On').status_code == 204
    _wait_power(machine, 'On')


def test_running_with_media_importing(machine, images):
    """A restart would boot without the media: 409 until it is in."""
    uid = _start(machine, 'Always')
    assert machine.insert(images.add('%s.iso' % machine.name)) \
        .status_code == 204
    machine.wait_phase('ImportInProgress')
    for reset_type in ('GracefulRestart', 'ForceRestart'):
        answer = machine.reset(reset_type)
        assert answer.status_code == 409, (reset_type, answer.text)
        assert 'virtual media' in answer.json()['error']['message']
        assert _vmi(machine)['metadata']['uid'] == uid
        assert not machine.vm()['status'].get('stateChangeRequests')
    assert machine.reset('ForceOff').status_code == 204
    _wait_power(machine, 'Off')


def test_graceful_restart_applies_a_boot_change_at_once(machine):
    """The restart follows the PATCH before virt-controller flags it."""
    uid = _start(machine, 'Always')
    assert machine.boot('Pxe', 'Continuous').status_code == 204
    assert machine.reset('GracefulRestart').status_code == 204
    vmi = harness.wait_until(
        lambda: _vmi(machine) if (_vmi(machine) or {}).get(
            'metadata', {}).get('uid') not in (None, uid) else None,
        20, 0.05, 'a new VMI')
    nic = vmi['spec']['domain']['devices']['interfaces'][0]
    assert nic['bootOrder'] == 1
    _wait_power(machine, 'On')
