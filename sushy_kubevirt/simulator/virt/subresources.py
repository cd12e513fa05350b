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

"""virt-api actions: VM start/stop/restart, VMI pause/unpause/softreboot.

Bodies, ``dryRun``, 4xx cases and messages follow virt-api. VM actions
record ``status.stateChangeRequests`` (or flip the run strategy) for the
VM controller and answer 202; VMI actions change the VMI at once.
"""

import copy

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator.virt import conditions
from sushy_kubevirt.simulator.virt import model

ACCEPTED = (202, None)
VM = 'virtualmachine'
VMI = 'virtualmachineinstance'


class Subresources:
    """The handlers ``sim.register_subresource`` serves."""

    def __init__(self, store, vmis):
        self.store = store
        self.vmis = vmis  # vmi.VMILifecycle

    def register(self, sim):
        for action in ('start', 'stop', 'restart'):
            sim.register_subresource(model.SUBRESOURCES, 'virtualmachines',
                                     action, untyped(getattr(
                                         self, 'vm_' + action)))
        for action in ('pause', 'unpause', 'softreboot'):
            sim.register_subresource(model.SUBRESOURCES,
                                     'virtualmachineinstances', action,
                                     getattr(self, 'vmi_' + action))

    # virtualmachines ----------------------------------------------------

    def vm_start(self, ns, name, body, user):
        body, dry = _options(body)
        vm = self._get(model.VM_RT, VM, ns, name)
        vmi = self.store.read_live(model.VMI_RT, ns, name)
        if vmi is not None and model.phase_of(vmi) not in (
                model.FINAL + ('Unknown', '')):
            raise conflict(VM, name, 'VM is already running')
        paused = bool(body.get('paused'))
        start = {'action': 'Start'}
        if paused:
            start['data'] = {'paused': 'true'}
        strategy = model.run_strategy(vm)
        if strategy == 'Halted':
            if paused:
                self._request(vm, [start], dry)
            elif not dry:
                self.store.mutate(model.VM_RT, ns, name, model.set_running)
        elif strategy in ('RerunOnFailure', 'Manual'):
            phase = model.phase_of(vmi) if vmi else None
            if strategy == 'RerunOnFailure' and phase == 'Failed':
                raise conflict(VM, name, 'RerunOnFailure does not support '
                               'starting VM from failed state')
            if (strategy == 'RerunOnFailure' and phase == 'Succeeded') or (
                    strategy == 'Manual' and phase in model.FINAL):
                changes = [_stop(vmi), start]
            else:
                changes = [start]
            self._request(vm, changes, dry)
        else:
            raise conflict(VM, name, '%s does not support manual start '
                           'requests' % strategy)
        return ACCEPTED

    def vm_stop(self, ns, name, body, user):
        body, dry = _options(body, ints=('gracePeriod',))
        grace = body.get('gracePeriod')
        vm = self._get(model.VM_RT, VM, ns, name)
        strategy = model.run_strategy(vm)
        vmi = self.store.read_live(model.VMI_RT, ns, name)
        live = vmi is not None and not model.is_final(vmi)
        old_grace = (vmi or {}).get('spec', {}).get(
            'terminationGracePeriodSeconds')
        if live and grace is not None and not dry:
            self.vmis.mutate(vmi, lambda o: o['spec'].__setitem__(
                'terminationGracePeriodSeconds', grace))
        if strategy in ('Halted', 'Manual', 'RerunOnFailure'):
            # Halted: a shorter grace period only; Manual, RerunOnFailure:
            # a Stop request, the run strategy kept.
            if not live:
                raise conflict(VM, name, 'VM is not running')
            if strategy == 'Halted' and (grace is None or (
                    old_grace is not None and grace >= old_grace)):
                raise conflict(VM, name, 'Halted only supports manual stop '
                               'requests with a shorter graceperiod')
            self._request(vm, [_stop(vmi)], dry)
        elif not dry:
            self.store.mutate(model.VM_RT, ns, name, model.set_halted)
        return ACCEPTED

    def vm_restart(self, ns, name, body, user):
        body, dry = _options(body, ints=('gracePeriodSeconds',))
        grace = body.get('gracePeriodSeconds')
        if grace is not None and grace > 0:
            raise apistatus.bad_request('For force restart, only '
                                        'gracePeriod=0 is supported for now')
        if grace is not None and grace < 0:
            raise apistatus.bad_request('gracePeriod has to be greater or '
                                        'equal to 0')
        vm = self._get(model.VM_RT, VM, ns, name)
        strategy = model.run_strategy(vm)
        if strategy in ('Halted', 'Once'):
            raise conflict(VM, name, 'RunStategy %s does not support manual '
                           'restart requests' % strategy)
        vmi = self.store.read_live(model.VMI_RT, ns, name)
        if vmi is None:
            raise conflict(VM, name, 'VM is not running: Halted')
        self._request(vm, [_stop(vmi), {'action': 'Start'}], dry)
        if grace == 0 and not dry and model.phase_of(vmi) in ('Scheduled',
                                                              'Running'):
            # virt-api deletes the virt-launcher pod: the VMI fails at once.
            self.vmis.enter(vmi, 'Failed')
        return ACCEPTED

    def _request(self, vm, changes, dry):
        """virt-api's getChangeRequestJson applied atomically."""
        only_stop = len(changes) == 1 and changes[0]['action'] == 'Stop'

        def change(obj):
            status = obj.setdefault('status', {})
            if status.get('stateChangeRequests') and not only_stop:
                raise apistatus.internal('unable to complete request: '
                                         'stop/start already underway')
            status['stateChangeRequests'] = changes
            status.pop('startFailure', None)
        if dry:
            change(copy.deepcopy(vm))
            return
        self.store.mutate(model.VM_RT, vm['metadata']['namespace'],
                          vm['metadata']['name'], change,
                          subresource='status')

    # virtualmachineinstances --------------------------------------------

    def vmi_pause(self, ns, name, body, user):
        _body, dry = _options(body)
        vmi = self._running_vmi(ns, name)
        if vmi['spec'].get('livenessProbe') is not None:
            raise apistatus.ApiError(
                403, 'Forbidden', '%s.%s "%s" is forbidden: Pausing VMIs '
                'with LivenessProbe is currently not supported'
                % (VMI, model.GROUP, name), details=_details(VMI, name))
        if conditions.condition(vmi, 'Paused') is not None:
            raise conflict(VMI, name, 'VMI is already paused')
        if not dry:
            self.vmis.set_status(vmi, conditions.pause)

    def vmi_unpause(self, ns, name, body, user):
        _body, dry = _options(body)
        vmi = self._get(model.VMI_RT, VMI, ns, name)
        if (model.phase_of(vmi) != 'Running'
                or conditions.condition(vmi, 'Paused') is None):
            raise conflict(VMI, name, 'VMI is not paused')
        if not dry:
            self.vmis.set_status(vmi, conditions.unpause)

    def vmi_softreboot(self, ns, name, body, user):
        vmi = self._running_vmi(ns, name)
        if conditions.has_true(vmi, 'Paused'):
            raise conflict(VMI, name, 'VMI is paused')
        domain = vmi['spec'].get('domain') or {}
        acpi = ((domain.get('features') or {}).get('acpi') or {}).get(
            'enabled')
        if conditions.condition(vmi, 'AgentConnected') is None and \
                acpi is False:
            raise conflict(VMI, name, 'VMI neither have the agent connected '
                           'nor the ACPI feature enabled')
        if domain.get('rebootPolicy') == 'Terminate':
            # The guest reboots and the VMI ends; the VM controller acts.
            self.vmis.enter(vmi, 'Succeeded')
        else:
            self.vmis.reboot_guest(vmi)

    def _running_vmi(self, ns, name):
        vmi = self._get(model.VMI_RT, VMI, ns, name)
        if model.phase_of(vmi) != 'Running':
            raise conflict(VMI, name, 'VM is not running')
        return vmi

    def _get(self, rt, resource, ns, name):
        obj = self.store.read_live(rt, ns, name)
        if obj is None:
            raise apistatus.ApiError(
                404, 'NotFound', '%s.%s "%s" not found'
                % (resource, model.GROUP, name),
                details=_details(resource, name))
        return obj


def untyped(fn):
    """``fn`` as a route that declares no representation.

    virt-api's start, stop and restart declare none (pkg/virt-api/api.go):
    go-restful answers 406 to an Accept that lacks ``*/*``.
    """
    def handler(*args):
        return fn(*args)
    handler.untyped = True
    return handler


def conflict(resource, name, message):
    """virt-api's 409 (singular resource: ``virtualmachine.kubevirt.io``)."""
    return apistatus.ApiError(
        409, 'Conflict', 'Operation cannot be fulfilled on %s.%s "%s": %s'
        % (resource, model.GROUP, name, message),
        details=_details(resource, name))


def _details(resource, name):
    return {'name': name, 'group': model.GROUP, 'kind': resource}


def _stop(vmi):
    return {'action': 'Stop', 'uid': vmi['metadata']['uid']}


def _options(body, ints=()):
    """``(body, dry_run)``; 400 for a non-object or a non-integer field."""
    body = body or {}
    if not isinstance(body, dict):
        raise apistatus.bad_request('Can not unmarshal Request body to '
                                    'struct, error: expected an object')
    for key in ints:
        value = body.get(key)
        if value is not None and (not isinstance(value, int)
                                  or isinstance(value, bool)):
            raise apistatus.bad_request(
                'Can not unmarshal Request body to struct, error: '
                'json: cannot unmarshal %s into Go struct field .%s of '
                'type int64' % (type(value).__name__, key))
    return body, body.get('dryRun') == ['All']
