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

"""A System's ``BootProgress`` from its VM and VMI.

KubeVirt tells two stages of a boot: the VMI runs (its domain started,
the firmware and then the guest boot) and, in a guest with the QEMU
guest agent, the agent connects (virt-handler adds the VMI condition
``AgentConnected``; it removes it when the agent goes, as in a guest
reboot). So ``LastState`` is:

* ``None`` while no VMI runs (the VM is off, or its VMI is still being
  scheduled or has ended) and while the running one is going away (the
  System reads ``PoweringOff``: a stop or restart was accepted, the
  guest shuts down): that boot cannot advance any more, and the next one
  has not started;
* ``OSBootStarted`` once a VMI runs: each VMI is one boot, so a new one
  (a new uid) starts there again whatever the last one reached;
* ``OSRunning`` once its guest agent is connected. A guest without an
  agent stays at ``OSBootStarted``.

``LastStateTime`` is the VMI's own time of that stage: the time its
phase became ``Running`` (``status.phaseTransitionTimestamps``), the
condition's ``lastProbeTime`` (virt-handler sets no
``lastTransitionTime`` on it) or, when the VMI ended or is being
deleted, the time it did or was.
Otherwise (no VMI, or one not yet running) the VMI holds no such time,
and none is given.
"""

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import power

NONE = 'None'
OS_BOOT_STARTED = 'OSBootStarted'
OS_RUNNING = 'OSRunning'
_AGENT = 'AgentConnected'
_RUNNING = 'Running'
_ENDED = ('Succeeded', 'Failed')


def _phase_time(vmi, phase):
    """When ``vmi`` last entered ``phase``, else None."""
    times = [t.get('phaseTransitionTimestamp') for t in fields.get(
        vmi, 'status', 'phaseTransitionTimestamps', default=[])
        if t.get('phase') == phase]
    return times[-1] if times else None


def _agent_time(vmi):
    """``(connected, when)`` of the VMI's ``AgentConnected`` condition."""
    for cond in fields.get(vmi, 'status', 'conditions', default=[]):
        if cond.get('type') == _AGENT:
            return str(cond.get('status')) == 'True', (
                cond.get('lastTransitionTime') or cond.get('lastProbeTime'))
    return False, None


def boot_progress(vm, vmi):
    """The ``BootProgress`` object of the System of ``vm``.

    :param vmi: the VM's VirtualMachineInstance, or None.
    """
    phase = fields.get(vmi, 'status', 'phase')
    if phase != _RUNNING:
        ended = phase in _ENDED
        return _progress(NONE, _phase_time(vmi, phase) if ended else None)
    if power.power_state(vm, vmi) == power.POWERING_OFF:
        return _progress(NONE, fields.get(
            vmi, 'metadata', 'deletionTimestamp'))
    started = _phase_time(vmi, _RUNNING)
    connected, when = _agent_time(vmi)
    if connected:
        return _progress(OS_RUNNING, when or started)
    return _progress(OS_BOOT_STARTED, started)


def _progress(state, when):
    body = {'LastState': state}
    if when:
        body['LastStateTime'] = when
    return body
