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

"""A VM's status as virt-controller computes it (pure functions).

From the VM, its VMI and its DataVolumes: state change requests (trimmed
once acted on), created/ready, conditions copied from the VMI,
RestartRequired, generations and ``printableStatus``.
"""

from sushy_kubevirt.simulator.virt import conditions
from sushy_kubevirt.simulator.virt import model

RESTART_REQUIRED = ('a non-live-updatable field was changed in the '
                    'template spec')
SYNCED = {'Ready', 'Failure', 'RestartRequired'}  # not copied from the VMI


def compute_status(vm, vmi, dvs):
    """Fill ``vm['status']`` from the VM, its VMI and its DataVolumes."""
    status = vm.setdefault('status', {})
    reqs = status.get('stateChangeRequests') or []
    if reqs and trim_needed(reqs[0], vmi):
        reqs = reqs[1:]
    if reqs:
        status['stateChangeRequests'] = reqs
    else:
        status.pop('stateChangeRequests', None)
    status['created'] = vmi is not None
    status['ready'] = bool(vmi and not model.is_final(vmi)
                           and conditions.has_true(vmi, 'Ready'))
    if status.get('runStrategy') or vmi is not None:
        status['runStrategy'] = model.run_strategy(vm)
    if vmi is None:
        conditions.put(status, conditions.vmi_not_exists())
        status['conditions'] = [c for c in status['conditions']
                                if c['type'] in SYNCED]
    else:
        _sync_with_vmi(vm, vmi, status)
    status['printableStatus'] = printable_status(vm, vmi, dvs)


def _sync_with_vmi(vm, vmi, status):
    ready = conditions.condition(vmi, 'Ready')
    if ready is None:
        conditions.put(status, conditions.make(
            'Ready', 'False', 'VMIConditionMissing',
            'VMI is missing the Ready condition'))
    else:
        conditions.put(status, dict(ready))
    vmi_conds = [c for c in (vmi.get('status') or {}).get(
        'conditions') or () if c.get('type') not in SYNCED]
    for cond in vmi_conds:
        conditions.put(status, dict(cond))
    names = {c['type'] for c in vmi_conds} | SYNCED
    status['conditions'] = [c for c in status['conditions']
                            if c['type'] in names]
    annotations = vmi['metadata'].get('annotations') or {}
    if not model.is_final(vmi) and not model.deleting(vmi):
        if annotations.get(model.ANN_TEMPLATE_HASH) != model.template_hash(vm):
            conditions.put(status, conditions.make(
                'RestartRequired', 'True', message=RESTART_REQUIRED))
        else:
            conditions.drop(status, 'RestartRequired')
    if annotations.get(model.ANN_GENERATION):
        status['observedGeneration'] = int(annotations[model.ANN_GENERATION])
    status['desiredGeneration'] = vm['metadata'].get('generation', 1)


def printable_status(vm, vmi, dvs):
    """virt-controller's setPrintableStatus precedence (modelled part).

    The DataVolume statuses rank above Starting and Stopped whatever the
    run strategy: a stopped VM whose volume imports is Provisioning.
    """
    live = vmi is not None and not model.is_final(vmi)
    if model.deleting(vm):
        return 'Terminating'
    if live and model.deleting(vmi):
        return 'Stopping'
    if model.phase_of(vmi) == 'Running':
        return 'Paused' if conditions.has_true(vmi, 'Paused') else 'Running'
    present = [dv for dv in dvs.values() if dv is not None]
    if any(_dv_error(dv) for dv in present):
        return 'DataVolumeError'
    if any(_dv_provisioning(dv) for dv in present):
        return 'Provisioning'
    if live:
        return 'Starting'
    return 'Stopped'


def _dv_error(dv):
    """KubeVirt's HasDataVolumeErrors: Failed, or its importer erring."""
    running = conditions.condition(dv, 'Running') or {}
    return model.phase_of(dv) == 'Failed' or (
        running.get('status') == 'False'
        and running.get('reason') in ('Error', 'ImagePullFailed'))


def _dv_provisioning(dv):
    """KubeVirt's HasDataVolumeProvisioning (WFFC and unbound is not)."""
    phase = model.phase_of(dv)
    if phase in ('Succeeded', 'PendingPopulation'):
        return False
    return phase != 'WaitForFirstConsumer' or conditions.has_true(
        dv, 'Bound')


def stopped_status(vm):
    """Status of a VM with no VMI and settled volumes (used by seeding)."""
    status = vm.setdefault('status', {})
    status.update(printableStatus='Stopped', created=False, ready=False)
    conditions.put(status, conditions.vmi_not_exists())


def trim_needed(req, vmi):
    """virt-controller's isTrimFirstChangeRequestNeeded."""
    if req.get('action') == 'Stop':
        return (vmi is None or not req.get('uid')
                or req['uid'] != vmi['metadata']['uid'])
    if req.get('action') == 'Start':
        return bool(vmi and not model.deleting(vmi)
                    and not model.is_final(vmi))
    return False
