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

"""New media on a running VM, then a restart: the new image boots.

The running VMI's pod mounts the old DataVolume's PVC, which therefore
outlives it (pvc-protection, imitated by the simulator). The new image
gets a DataVolume of a new name, imports meanwhile, and the restart that
follows (retried on the retryable 409 while it imports, as Ironic does)
boots it; the old PVC goes with the old VMI.
"""

import pytest
from tests import backend
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

CONFLICT_MARKER = 'ActionParameterValueConflict'
PVCS = ('', 'persistentvolumeclaims')
#: Whether a running VMI has a virt-launcher pod that pvc-protection
#: sees: the simulator imitates one, real KubeVirt makes one; the
#: simulated KubeVirt on a real kube-apiserver makes none.
LAUNCHER_PODS = backend.BACKEND != 'kube-apiserver'


@pytest.fixture(scope='module')
def sim():
    """The suite's simulator; a graceful shutdown takes 0.2 s."""
    simulator = backend.start(vms=8, stage_delays=dict(conftest.DELAYS,
                                                       Shutdown=0.2))
    try:
        yield simulator
    finally:
        simulator.stop()


def _running_vmi(sim, machine, other_than=None):
    vmi = harness.vmi(sim, machine.name)
    if vmi and vmi.get('status', {}).get('phase') == 'Running' and \
            vmi['metadata']['uid'] != other_than:
        return vmi
    return None


def _tray_volume(vmi):
    return {v['name']: (v.get('dataVolume') or {}).get('name')
            for v in vmi['spec']['volumes']}[media.disk_name('Cd')]


def _accepted(machine, reset_type):
    """The reset once accepted, retried on the retryable 409 as Ironic."""
    def answer():
        reply = machine.reset(reset_type)
        if reply.status_code == 409 and CONFLICT_MARKER in reply.text:
            return None
        return reply
    return harness.wait_until(answer, 20, 0.05, '%s accepted' % reset_type)


@pytest.mark.parametrize('eject, reset_type', [
    (True, 'ForceRestart'), (False, 'GracefulRestart')])
def test_reinsert_on_a_running_vm_then_restart(machine, images, sim, eject,
                                               reset_type):
    first = images.add('first-%s.iso' % machine.name)
    second = images.add('second-%s.iso' % machine.name)
    assert machine.insert(first).status_code == 204
    machine.wait_media(Inserted=True)
    assert machine.reset('On').status_code == 204
    old = harness.wait_until(lambda: _running_vmi(sim, machine), 20, 0.02,
                             'VMI running')
    old_dv = _tray_volume(old)
    pvcs = sim.store.resource(*PVCS)

    if eject:
        assert machine.eject().status_code == 204
    assert machine.insert(second).status_code == 204
    new_dv = machine.dv_name
    assert new_dv != old_dv
    # The running VMI's pod holds the old PVC; the new image imports
    # meanwhile.
    if LAUNCHER_PODS:
        assert sim.store.try_get(pvcs, 'default', old_dv) is not None
    answer = _accepted(machine, reset_type)
    assert answer.status_code == 204, answer.text

    vmi = harness.wait_until(
        lambda: _running_vmi(sim, machine, old['metadata']['uid']), 20,
        0.02, 'a new VMI running')
    assert _tray_volume(vmi) == new_dv
    dv = sim.store.try_get(cdi.DV_RT, 'default', new_dv)
    assert media.source_url(dv) == second
    assert dv['status']['phase'] == 'Succeeded'
    assert machine.wait_media(Inserted=True)['Image'] == second
    # The old VMI gone, the old PVC goes too.
    harness.wait_until(
        lambda: sim.store.try_get(cdi.DV_RT, 'default', old_dv) is None
        and sim.store.try_get(pvcs, 'default', old_dv) is None, 20, 0.02,
        'the old DataVolume and PVC deleted')
    assert machine.reset('ForceOff').status_code == 204
