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

"""Power state of a VM and the KubeVirt calls that perform a Redfish reset.

``power_state(vm, vmi)`` maps VM + VMI status to a DMTF PowerState.
``reset_plan(reset_type, vm, vmi)`` returns the calls to make, in order;
``[]`` means the system is already in (or on its way to) the requested
state, so the reset is a successful no-op.

A :data:`Call` has ``target`` 'vm' or 'vmi' and ``action``:

* a ``subresources.kubevirt.io`` action (start, stop, restart on the VM;
  softreboot, unpause on the VMI) with ``body`` the JSON request body;
* :data:`RUN_STRATEGY` on the VM, with ``body`` the run strategy to set:
  send :func:`strategy_ops` of the VM as it is then, with the usual
  resourceVersion guard (no call when it already has that strategy).

runStrategy rules honoured (KubeVirt ``pkg/virt-api/rest/lifecycle.go``,
formerly ``subresource.go``): start is a 409 for Always/Once and for a
running VMI, restart is a 409 for Halted/Once or without a VMI and fails
while a state change is pending, stop is a 409 without a live VMI for
Halted/Manual/RerunOnFailure, and Halted with a live VMI only accepts a
shorter grace period. A stop of an Always/Once VM only sets Halted; one of
a Manual/RerunOnFailure/Halted VM *replaces* every pending state change
request with ``Stop{uid}``.

Two cases need more than one call (see :func:`reset_plan`):

* a stop while a restart is pending (``[Stop{uid}, Start]``): KubeVirt's
  virt-controller turns a Halted VM whose first request is Start back into
  Always once the VMI is gone (``syncRunStrategy``, case Halted), so a
  plain stop would end On. The VM is switched to Manual, stopped (which
  drops the Start request) and set to Halted.
* ForceRestart while a stop is in progress: the stop is forced (grace
  period 0) and the VM set to Always, so KubeVirt starts a new VMI as soon
  as the old one is gone.

A VM with ``runStrategy: Once`` whose run has finished is switched to
``Always`` - the same end state KubeVirt's own start gives a Halted VM.
``spec.running`` and ``spec.runStrategy`` are never both set: a VM using
``running`` keeps it for Always/Halted, and loses it in the patch that
gives it ``runStrategy: Manual``.
"""

import collections

from sushy_kubevirt.kubevirt import applied
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import refusals

NotSupported = refusals.NotSupported
TransitionInProgress = refusals.TransitionInProgress
UnknownResetType = refusals.UnknownResetType

ON = 'On'
OFF = 'Off'
POWERING_ON = 'PoweringOn'
POWERING_OFF = 'PoweringOff'
PAUSED = 'Paused'
POWER_STATES = (ON, OFF, POWERING_ON, POWERING_OFF, PAUSED)

RESET_ON = 'On'
RESET_FORCE_ON = 'ForceOn'
RESET_FORCE_OFF = 'ForceOff'
RESET_GRACEFUL_SHUTDOWN = 'GracefulShutdown'
RESET_GRACEFUL_RESTART = 'GracefulRestart'
RESET_FORCE_RESTART = 'ForceRestart'
RESET_NMI = 'Nmi'
RESET_PUSH_POWER_BUTTON = 'PushPowerButton'
SUPPORTED_RESET_TYPES = (
    RESET_ON, RESET_FORCE_ON, RESET_FORCE_OFF, RESET_GRACEFUL_SHUTDOWN,
    RESET_GRACEFUL_RESTART, RESET_FORCE_RESTART, RESET_PUSH_POWER_BUTTON)
# Valid DMTF ResetType values KubeVirt has no faithful equivalent for.
UNSUPPORTED_RESET_TYPES = (
    RESET_NMI, 'PowerCycle', 'FullPowerCycle', 'Suspend', 'Pause', 'Resume')

#: The Redfish action ResetType belongs to (for error messages).
RESET_ACTION = 'ComputerSystem.Reset'

Call = collections.namedtuple('Call', 'target action body')
#: Call action: set the VM's run strategy to ``body``.
RUN_STRATEGY = 'run_strategy'

FINAL_PHASES = ('Succeeded', 'Failed')
STARTING_PHASES = ('', 'Pending', 'Scheduling', 'Scheduled')
STOPPING_STATUSES = ('Stopping', 'Terminating')
# printableStatus values of a VM that wants to run but has no live VMI.
# Not Provisioning or DataVolumeError: virt-controller ranks them ahead of
# Stopped whether the VM is to run or not (a tray importing or failed).
STARTING_STATUSES = (
    'Starting', 'WaitingForVolumeBinding', 'WaitingForReceiver',
    'ErrorUnschedulable', 'ErrImagePull', 'ImagePullBackOff',
    'ErrorPvcNotFound', 'DataVolumeNotFound', 'CrashLoopBackOff')


def run_strategy(vm):
    """Effective runStrategy: spec.runStrategy, else from spec.running."""
    spec = vm.get('spec') or {}
    if spec.get('runStrategy'):
        return spec['runStrategy']
    return 'Always' if spec.get('running') else 'Halted'


def _phase(vmi):
    return fields.get(vmi, 'status', 'phase', default='')


def live(vmi):
    """True when ``vmi`` exists and is not final (Succeeded/Failed)."""
    return vmi is not None and _phase(vmi) not in FINAL_PHASES


def _pending(vm):
    return [r.get('action') for r in
            fields.get(vm, 'status', 'stateChangeRequests', default=[])]


def strategy_ops(vm, strategy):
    """JSON-patch ops giving ``vm`` run strategy ``strategy`` ([] if set).

    A VM using ``spec.running`` keeps it for Always/Halted; any other
    strategy replaces it with ``spec.runStrategy`` in the same patch.
    """
    if run_strategy(vm) == strategy:
        return []
    spec = vm.get('spec') or {}
    if spec.get('runStrategy'):
        return [jsonpatch.replace('/spec/runStrategy', strategy)]
    if strategy in ('Always', 'Halted'):
        return [jsonpatch.add('/spec/running', strategy == 'Always')]
    ops = [jsonpatch.remove('/spec/running')] if 'running' in spec else []
    return ops + [jsonpatch.add('/spec/runStrategy', strategy)]


def starts(call):
    """True when ``call`` makes KubeVirt create a VMI from the template."""
    return call.action in ('start', 'restart') or (
        call.action == RUN_STRATEGY and call.body == 'Always')


def needs_live_check(calls, vm):
    """True when a plan made from the cached ``vm`` must be confirmed live.

    An empty plan (the 204 would do nothing), a plan that starts the VM,
    and a stop of an Always/Once VM: that stop only sets Halted, and a
    restart whose ``[Stop{uid}, Start]`` the cache has not delivered yet
    would then bring the VM back on (virt-controller ``syncRunStrategy``
    turns a Halted VM whose first request is Start into Always).
    """
    if not calls or any(starts(call) for call in calls):
        return True
    return run_strategy(vm) in ('Always', 'Once') and any(
        call.action == 'stop' for call in calls)


def paused(vmi):
    """True when the VMI has condition Paused=True."""
    return vmi is not None and fields.condition(vmi, 'Paused')


def power_state(vm, vmi):
    """DMTF PowerState of a VM given its VMI (or None when there is none).

    * PoweringOff: a live VMI being deleted, printableStatus Stopping or
      Terminating, a pending Stop request, or a live VMI while the
      strategy is Halted (stop accepted, VMI not yet gone).
    * Paused / On: a live VMI in phase Running with / without condition
      Paused. Phase Unknown (node lost) also reads On: the VMI is not final.
    * PoweringOn: a live VMI in phase ''/Pending/Scheduling/Scheduled; or
      no live VMI and a pending Start request, strategy Always, strategy
      Once that has not run yet, RerunOnFailure after a Failed run or
      just set (``status.runStrategy`` another: virt-controller starts
      it), or a starting printableStatus (Starting,
      WaitingForVolumeBinding, ...) unless the strategy is Halted.
    * Off: anything else (no VMI, or a final one), Provisioning and
      DataVolumeError included: they say a DataVolume imports or failed,
      not that the VM is to run.
    """
    strategy = run_strategy(vm)
    pending = _pending(vm)
    printable = fields.get(vm, 'status', 'printableStatus')
    if live(vmi):
        if (fields.get(vmi, 'metadata', 'deletionTimestamp')
                or printable in STOPPING_STATUSES or 'Stop' in pending
                or strategy == 'Halted'):
            return POWERING_OFF
        if _phase(vmi) in STARTING_PHASES:
            return POWERING_ON
        return PAUSED if paused(vmi) else ON
    if 'Start' in pending:
        return POWERING_ON
    if strategy == 'Always':
        return POWERING_ON
    if strategy == 'Once' and vmi is None:
        return POWERING_ON
    if strategy == 'RerunOnFailure' and (_phase(vmi) == 'Failed' or (
            vmi is None and fields.get(vm, 'status', 'runStrategy')
            != strategy)):
        return POWERING_ON
    if strategy != 'Halted' and printable in STARTING_STATUSES:
        return POWERING_ON
    return OFF


def _busy(reset_type, state):
    return refusals.TransitionInProgress(
        'Cannot %s while the system is %s; retry when the transition '
        'ends' % (reset_type, state), 'ResetType', reset_type)


def _start(vm):
    if run_strategy(vm) == 'Once':
        return [Call('vm', RUN_STRATEGY, 'Always')]
    return [Call('vm', 'start', {})]


def _power_on(reset_type, vm, vmi, state):
    if state == PAUSED:
        return [Call('vmi', 'unpause', {})]
    if state in (ON, POWERING_ON):
        return []
    if state == POWERING_OFF:
        raise _busy(reset_type, state)
    return _start(vm)


def _grace(vmi):
    return fields.get(vmi, 'spec', 'terminationGracePeriodSeconds')


def _cancel_restart(reset_type, vm, vmi, state, body):
    """Stop a VM whose pending Start request would bring it back.

    A stop of a Manual/RerunOnFailure VM replaces the pending requests
    with ``Stop{uid}``; any other VM goes through Manual for that stop
    and ends Halted.
    """
    if not live(vmi):
        raise _busy(reset_type, state)
    stop = Call('vm', 'stop', body)
    if run_strategy(vm) in ('Manual', 'RerunOnFailure'):
        return [stop]
    return [Call('vm', RUN_STRATEGY, 'Manual'), stop,
            Call('vm', RUN_STRATEGY, 'Halted')]


def _stop(reset_type, vm, vmi, state, body):
    if state == OFF:
        return []
    if 'Start' in _pending(vm):
        return _cancel_restart(reset_type, vm, vmi, state, body)
    if state == POWERING_OFF:
        if not body:
            return []
        grace = _grace(vmi)
        if grace is not None and grace <= body['gracePeriod']:
            return []
        return [Call('vm', 'stop', body)]
    if not live(vmi) and run_strategy(vm) not in ('Always', 'Once'):
        # Manual/RerunOnFailure/Halted reject stop without a live VMI.
        raise _busy(reset_type, state)
    return [Call('vm', 'stop', body)]


def _force_cycle(reset_type, vm, vmi, state):
    """ForceRestart while PoweringOff: force the stop, then run again.

    The stop (grace period 0, unless already 0) and ``Always`` make
    KubeVirt create a new VMI once the old one is gone. A Manual or
    RerunOnFailure VM cannot queue a Start behind its pending Stop
    (virt-api refuses a second change request), so it is busy unless a
    forced restart is already under way.
    """
    forced = _grace(vmi) is not None and _grace(vmi) <= 0
    if run_strategy(vm) in ('Manual', 'RerunOnFailure'):
        if forced and 'Start' in _pending(vm):
            return []
        raise _busy(reset_type, state)
    calls = [] if forced else [Call('vm', 'stop', {'gracePeriod': 0})]
    if calls or run_strategy(vm) != 'Always':
        calls.append(Call('vm', RUN_STRATEGY, 'Always'))
    return calls


def _reboot_policy(vm, vmi):
    """The running VMI's rebootPolicy (the template's without one)."""
    if fields.get(vmi, 'spec', 'domain'):
        return fields.get(vmi, 'spec', 'domain', 'rebootPolicy')
    return fields.get(fields.domain(vm), 'rebootPolicy')


def _soft_reboot_applies(vm, vmi):
    """A guest reboot is a faithful GracefulRestart.

    It needs a running, unpaused VMI with a connected guest agent.
    ``rebootPolicy: Terminate`` ends the VMI on a guest reboot, and only
    strategy Always makes a new one (from the template): any other VM
    would end Off, so it is restarted. With the default ``Reboot`` the
    VMI survives with its old boot order, media and BIOS, so a change it
    has not taken (:func:`.applied.restart_pending`: RestartRequired, or
    one virt-controller has not flagged yet) is restarted instead.
    """
    if _phase(vmi) != 'Running' or paused(vmi):
        return False
    if not fields.condition(vmi, 'AgentConnected'):
        return False
    if _reboot_policy(vm, vmi) == 'Terminate':
        return run_strategy(vm) == 'Always'
    return not applied.restart_pending(vm, vmi)


def _restart(reset_type, vm, vmi, state, force):
    if state == OFF:
        return _start(vm)
    if state == POWERING_OFF:
        if force:
            return _force_cycle(reset_type, vm, vmi, state)
        raise _busy(reset_type, state)
    if not live(vmi):
        # Powering on without a VMI yet: the coming VMI is built from
        # the current template, which is what a restart would give.
        return []
    if not force and _soft_reboot_applies(vm, vmi):
        return [Call('vmi', 'softreboot', {})]
    body = {'gracePeriodSeconds': 0} if force else {}
    calls = [Call('vm', 'restart', body)]
    if run_strategy(vm) == 'Once':
        calls = _start(vm) + calls
    return calls


def reset_plan(reset_type, vm, vmi):
    """Calls performing Redfish ``reset_type`` on ``vm`` (list of Call).

    * On / ForceOn: start (unpause when Paused); [] when On/PoweringOn.
    * ForceOff: stop {"gracePeriod": 0} (also escalates a graceful stop in
      progress); GracefulShutdown: stop {}; [] when Off. While a restart
      is pending: Manual, stop, Halted (see the module docstring).
    * GracefulRestart: softreboot of the VMI when it runs with a guest
      agent connected, no change is pending and the guest's reboot keeps
      it on (see :func:`_soft_reboot_applies`), else restart {}.
    * ForceRestart: restart {"gracePeriodSeconds": 0}, a new VMI from the
      current template (boot order and media changes apply); while
      PoweringOff: stop {"gracePeriod": 0} and runStrategy Always.
    * A restart of an Off VM starts it.
    * PushPowerButton: GracefulShutdown when On/Paused/PoweringOn, On
      when Off.

    Raises UnknownResetType (not a DMTF value / None), NotSupported (Nmi,
    PowerCycle, ...) and TransitionInProgress (e.g. On while PoweringOff,
    GracefulRestart while PoweringOff, ForceRestart while a Manual VM
    stops, a stop while a start request has no VMI yet).
    """
    if reset_type in UNSUPPORTED_RESET_TYPES:
        raise refusals.NotSupported(
            'ResetType %s is not supported by KubeVirt virtual machines'
            % reset_type, 'ResetType', RESET_ACTION)
    if reset_type is None:
        raise refusals.MissingResetType(
            'Unknown ResetType None; allowed values: %s'
            % ', '.join(SUPPORTED_RESET_TYPES), RESET_ACTION, 'ResetType')
    if reset_type not in SUPPORTED_RESET_TYPES:
        raise refusals.UnknownResetType(
            'Unknown ResetType %r; allowed values: %s'
            % (reset_type, ', '.join(SUPPORTED_RESET_TYPES)), reset_type,
            'ResetType', RESET_ACTION)
    state = power_state(vm, vmi)
    if reset_type == RESET_PUSH_POWER_BUTTON:
        if state == POWERING_OFF:
            raise _busy(reset_type, state)
        reset_type = RESET_ON if state == OFF else RESET_GRACEFUL_SHUTDOWN
    if reset_type in (RESET_ON, RESET_FORCE_ON):
        return _power_on(reset_type, vm, vmi, state)
    if reset_type == RESET_FORCE_OFF:
        return _stop(reset_type, vm, vmi, state, {'gracePeriod': 0})
    if reset_type == RESET_GRACEFUL_SHUTDOWN:
        return _stop(reset_type, vm, vmi, state, {})
    return _restart(reset_type, vm, vmi, state,
                    force=reset_type == RESET_FORCE_RESTART)
