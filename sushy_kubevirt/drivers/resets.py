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

"""ComputerSystem.Reset: a plan confirmed live when the cache may lag.

:func:`~sushy_kubevirt.kubevirt.power.reset_plan` makes the plan from
objects; here it is checked against the API server where a lagging watch
cache could make it wrong, then sent.
"""

import logging

from sushy_tools import error

from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt import errormap
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import firmwareupdate
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import power
from sushy_kubevirt.kubevirt import refusals
from sushy_kubevirt.kubevirt import tray

LOG = logging.getLogger(__name__)
#: virt-api's answer when kube-apiserver refused its own guarded JSON
#: patch of the VM: a concurrent change failed the patch's ``test``.
#: virt-api answers 409 only when the refusal names the test, and
#: kube-apiserver's does not (:data:`.apierrors.PATCH_NOT_APPLICABLE`).
VIRT_API_RACE = 'Internal error occurred: ' + \
    apierrors.PATCH_NOT_APPLICABLE


def reset(cluster, state, vm, vmi_of):
    """Perform reset ``state`` of ``vm`` (``vmi_of(vm)``: its VMI)."""
    namespace, name = identity.key(vm)
    vm, calls = plan(cluster, state, vm, vmi_of(vm))
    check_power_on(cluster, vm, calls)
    starts = any(power.starts(call) for call in calls)
    vmi = vmi_of(vm) if starts else None
    if starts and (bios.pending(vm, vmi) or firmwareupdate.pending(vm, vmi)):
        # Pending BIOS settings and firmware apply at this boot (1 PATCH).
        preconditions.patch(
            cluster, namespace, name,
            lambda vm: bios.boot_ops(vm) + firmwareupdate.boot_ops(vm),
            retries=preconditions.PATCH_ATTEMPTS)
    # A subresource call takes no precondition: an If-Match is
    # consumed on the VM first (no API call without one).
    preconditions.claim(cluster, namespace, name,
                        change=bool(calls))
    for call in calls:
        try:
            perform(cluster, namespace, name, call)
        except apierrors.Conflict as exc:
            raise errormap.busy('Cannot %s now: %s' % (state, exc),
                                value=state)
    if any(call.target == 'vm' and call.action != power.RUN_STRATEGY
           for call in calls):
        # virt-api answers a start, stop or restart with an empty 202
        # after writing the VM (its run strategy, or a state change
        # request): 1 GET gives this process's next read that VM, so
        # the client reads its own reset (PoweringOff after a
        # GracefulShutdown) even before the watch delivers it. The
        # reset is done: a failed read only leaves that to the watch.
        try:
            cluster.get_vm_live(namespace, name)
        except apierrors.ApiError as exc:
            LOG.debug('VM %s/%s not read after %s: %s', namespace, name,
                      state, exc)


def plan(cluster, state, vm, vmi):
    """``(vm, calls)`` for reset ``state``, confirmed live if need be.

    A plan from the cache that KubeVirt validates itself (a reboot, a
    stop that replaces pending requests) is sent as is. The plans
    :func:`~sushy_kubevirt.kubevirt.power.needs_live_check` names (a
    no-op, a start, a stop of an Always/Once VM) are confirmed against
    the API server: the VM is read live (1 GET); when its
    resourceVersion is the cached one the plan stands, else it is made
    again from the live VM and VMI (1 more GET). The returned VM is
    then the live one, which
    :func:`check_power_on` needs.
    Another worker's or replica's start, stop, restart or InsertMedia
    that this process's watch has not delivered yet is so never
    missed. A refusal for a transition in progress is confirmed the
    same way, VMI included (2 GETs): a lagging cache may still be
    replaying a transition that is over. A held If-Match is checked
    against the live VM first (:func:`.preconditions.verify`): a
    request whose ETag another reset consumed gets 412, not the 409
    the other reset's transition would give.
    """
    try:
        calls = power.reset_plan(state, vm, vmi)
    except refusals.TransitionInProgress:
        calls = None
    if calls is not None and not power.needs_live_check(calls, vm):
        return vm, calls
    namespace, name = identity.key(vm)
    live = cluster.get_vm_live(namespace, name)
    preconditions.verify(live)
    if calls is not None and \
            fields.get(live, 'metadata', 'resourceVersion') == \
            fields.get(vm, 'metadata', 'resourceVersion'):
        return live, calls
    vmi = cluster.get_vmi_live(namespace, name)
    return live, power.reset_plan(state, live, vmi)


def check_power_on(cluster, vm, calls):
    """Refuse ``calls`` that would boot ``vm`` with an unusable image.

    Only calls that create a VMI from the template (start, restart, the
    runStrategy Once patch) are checked, and ``vm`` must be as the API
    server has it now (the systems driver reads it live before a start):
    a cached VM may not show another worker's InsertMedia yet. The
    attached DataVolume is read live too (1 GET per tray). While the
    image imports the answer is a 409 carrying
    ``ActionParameterValueConflict``, which Ironic retries for a
    power-on (``[redfish] power_on_conflict_retry_attempts``); a failed
    import is a 409 without it: the VM is never started from an empty or
    broken tray.
    """
    if not any(power.starts(call) for call in calls):
        return
    namespace = vm['metadata']['namespace']
    for device in tray.DEVICES:
        name = media.attached_datavolume(vm, device)
        if name is None:
            continue
        dv = cluster.get_datavolume_live(namespace, name)
        blocker = tray.power_on_blocker(vm, dv, device)
        if blocker is None:
            continue
        retryable, message = blocker
        message = 'Cannot power on yet: %s' % message
        if retryable:
            raise errormap.busy(message + '; retry later')
        raise error.Conflict(message)


def perform(cluster, namespace, name, call):
    """Send one call of a reset plan: a patch or a subresource call."""
    if call.action == power.RUN_STRATEGY:
        guarded.guarded_patch(
            cluster, namespace, name,
            lambda vm: power.strategy_ops(vm, call.body))
    elif call.target == 'vm':
        try:
            cluster.vm_subresource(namespace, name, call.action, call.body)
        except apierrors.ApiError as exc:
            if exc.status == 500 and exc.message == VIRT_API_RACE:
                raise apierrors.Conflict(
                    'the VM changed during the %s' % call.action,
                    status=409) from exc
            raise
    else:
        cluster.vmi_subresource(namespace, name, call.action, call.body)
