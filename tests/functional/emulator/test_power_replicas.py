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

"""Two emulator processes on one cluster: a reset right after another.

Ironic devstack runs sushy-emulator under gunicorn with 2 workers, so a
``Reset On`` and the ``ForceOff`` sent right after it can be served by two
processes; two ``sushy-kubevirt-emulator`` replicas are the same case with
the test choosing who serves what. The watches deliver every event a
little late, so the second process's cache has not seen the first one's
write when the second request arrives. A request that finds the system in
the wanted state *in the cache* must confirm it live, or it answers 204
and does nothing.
"""

import time

import pytest
import requests
from tests.functional.emulator import harness

ROUNDS = 10
#: Per-event delay of the emulators' VM and VMI watches.
LAG = 0.05
CONFLICT = 'ActionParameterValueConflict'


@pytest.fixture(scope='module')
def replicas(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('replicas')
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kubeconfig')))
    lag = sim.faults.event_delay(
        LAG, path='virtualmachine(instance)?s$', query={'watch': None},
        times=None)
    try:
        with harness.replicas(config, tmp_path_factory) as urls:
            yield urls
    finally:
        sim.faults.remove(lag)


def _reset(url, machine, reset_type):
    return requests.post(
        url + machine.path + '/Actions/ComputerSystem.Reset',
        json={'ResetType': reset_type}, timeout=30)


def _reset_retried(url, machine, reset_type, timeout=20.0):
    """Send like Ironic: retry while answered the retryable 409."""
    deadline = time.monotonic() + timeout
    while True:
        answer = _reset(url, machine, reset_type)
        if answer.status_code != 409 or CONFLICT not in answer.text or \
                time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _settled(sim, machine, on):
    vm = harness.vm(sim, machine.name)
    vmi = harness.vmi(sim, machine.name)
    if on:
        return vm['spec'].get('runStrategy') == 'Always' and \
            (vmi or {}).get('status', {}).get('phase') == 'Running' and \
            not vmi['metadata'].get('deletionTimestamp')
    return vm['spec'].get('runStrategy') == 'Halted' and vmi is None


def _converge(sim, urls, machine, on, what):
    """Wait for the cluster, then every replica, to show the state."""
    harness.wait_until(lambda: _settled(sim, machine, on), 20, 0.02, what)
    state = 'On' if on else 'Off'
    for url in urls:
        harness.wait_until(lambda: requests.get(
            url + machine.path, timeout=30).json()['PowerState'] == state,
            20, 0.02, '%s: %s on %s' % (what, state, url))
    # Still so: nothing left in flight turns it back.
    assert _settled(sim, machine, on), what


def _power(sim, urls, machine, reset_type, on):
    assert _reset_retried(urls[0], machine, reset_type).status_code == 204
    _converge(sim, urls, machine, on, reset_type)


def test_on_then_force_off_on_another_process(sim, machine, replicas):
    first, second = replicas
    for round_ in range(ROUNDS):
        assert _reset(first, machine, 'On').status_code == 204
        answer = _reset_retried(second, machine, 'ForceOff')
        assert answer.status_code == 204, (round_, answer.text)
        _converge(sim, replicas, machine, False, 'round %d' % round_)


def test_force_off_then_on_on_another_process(sim, machine, replicas):
    first, second = replicas
    _power(sim, replicas, machine, 'On', True)
    for round_ in range(ROUNDS):
        assert _reset(first, machine, 'ForceOff').status_code == 204
        answer = _reset_retried(second, machine, 'On')
        assert answer.status_code == 204, (round_, answer.text)
        _converge(sim, replicas, machine, True, 'round %d' % round_)
    _power(sim, replicas, machine, 'ForceOff', False)


def test_graceful_restart_then_force_off_on_another_process(
        sim, machine, replicas):
    """ForceOff right after a restart ends Off.

    The restart's pending Start, which the serving process's cache has not
    seen, must not bring the VM back.
    """
    first, second = replicas
    for round_ in range(ROUNDS // 2):
        _power(sim, replicas, machine, 'On', True)
        assert _reset(first, machine,
                      'GracefulRestart').status_code == 204
        answer = _reset_retried(second, machine, 'ForceOff')
        assert answer.status_code == 204, (round_, answer.text)
        _converge(sim, replicas, machine, False, 'round %d' % round_)
