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

"""virt-controller's VM controller.

Gives a VM without a firmware UUID the legacy one (its firmware
controller), creates the VM's template DataVolumes, creates and deletes
its VMI as the run strategy and ``status.stateChangeRequests`` say, and
writes the VM status (``vmstatus.compute_status``).
"""

import copy
import uuid

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator.virt import conditions
from sushy_kubevirt.simulator.virt import model
from sushy_kubevirt.simulator.virt import vmstatus

#: The namespace of virt-controller's CalculateLegacyUUID.
LEGACY_UUID_NAMESPACE = uuid.UUID('6a1a24a1-4061-4607-8bf4-a3963d0c5895')
FINALIZERS = ['kubevirt.io/virtualMachineControllerFinalize',
              'foregroundDeleteVirtualMachine']


class VMController:
    """Reconciles VirtualMachines, one at a time, on the scheduler."""

    def __init__(self, store, scheduler):
        self.store = store
        self.scheduler = scheduler

    def enqueue(self, ns, name):
        self.scheduler.call_later(0.0, lambda: self.sync(ns, name),
                                  key=('vm', ns, name))

    def sync(self, ns, name):
        vm = self.store.try_get(model.VM_RT, ns, name)
        if vm is None:
            return
        vmi = self.store.try_get(model.VMI_RT, ns, name)
        if model.deleting(vm):
            if vmi is not None:
                self.stop_vmi(vmi)
        else:
            self.ensure_firmware_uuid(vm)
            ready = self.ensure_datavolumes(vm)
            self.sync_run_strategy(vm, vmi, ready)
            vmi = self.store.try_get(model.VMI_RT, ns, name)
        self.update_status(ns, name, vmi)

    def ensure_firmware_uuid(self, vm):
        """An empty ``firmware.uuid`` gets :func:`legacy_firmware_uuid`.

        virt-api fills it on creation only; a VM made before KubeVirt v1.6,
        or whose update emptied it, gets the legacy one from here.
        """
        if _firmware(vm).get('uuid'):
            return

        def change(obj):
            domain = obj['spec'].setdefault('template', {}).setdefault(
                'spec', {}).setdefault('domain', {})
            firmware = domain.get('firmware') or {}
            if not firmware.get('uuid'):
                domain['firmware'] = dict(firmware, uuid=legacy_firmware_uuid(
                    obj['metadata']['name']))
        with apistatus.ignoring(404):
            self.store.mutate(model.VM_RT, vm['metadata']['namespace'],
                              vm['metadata']['name'], change)

    def ensure_datavolumes(self, vm):
        """Create missing template DataVolumes; True when all are ready."""
        ready = True
        ns = vm['metadata']['namespace']
        for template in vm['spec'].get('dataVolumeTemplates') or ():
            dv = self.store.try_get(cdi.DV_RT, ns,
                                    template['metadata']['name'])
            if dv is None:
                ready = False
                with apistatus.ignoring(409):
                    self.store.create(cdi.DV_RT,
                                      cdi.dv_from_template(vm, template))
            elif model.phase_of(dv) not in model.DV_READY:
                ready = False
        return ready

    def sync_run_strategy(self, vm, vmi, dvs_ready):
        strategy = model.run_strategy(vm)
        if strategy == 'Always':
            if vmi is not None:
                if model.has_stop_request_for(vm, vmi) or model.is_final(vmi):
                    self.stop_vmi(vmi)
            else:
                self.start_vmi(vm, dvs_ready)
        elif strategy == 'RerunOnFailure':
            if vmi is not None:
                failed = model.phase_of(vmi) == 'Failed'
                if not model.deleting(vmi) and (
                        model.has_stop_request_for(vm, vmi)
                        or model.is_final(vmi)):
                    self.stop_vmi(vmi)
                    if failed:
                        self.append_start_request(vm)
            elif (model.has_start_request(vm) or (vm.get('status') or {}).get(
                    'runStrategy') != strategy):
                self.start_vmi(vm, dvs_ready)
        elif strategy == 'Manual':
            if vmi is not None:
                if model.has_stop_request_for(vm, vmi):
                    self.stop_vmi(vmi)
            elif model.has_start_request(vm):
                self.start_vmi(vm, dvs_ready)
        elif strategy == 'Halted':
            if vmi is None:
                if model.has_start_request(vm):
                    self.store.mutate(
                        model.VM_RT, vm['metadata']['namespace'],
                        vm['metadata']['name'], model.set_running)
            else:
                self.stop_vmi(vmi)
        elif strategy == 'Once':
            if vmi is None:
                self.start_vmi(vm, dvs_ready)

    def start_vmi(self, vm, dvs_ready):
        if not dvs_ready:
            return
        req = model.first_request(vm) or {}
        paused = (req.get('action') == 'Start'
                  and (req.get('data') or {}).get('paused') == 'true')
        ns, name = vm['metadata']['namespace'], vm['metadata']['name']
        if self.changed_since(vm):
            return
        self.store.mutate(model.VM_RT, ns, name,
                          lambda o: conditions.drop(
                              o.setdefault('status', {}), 'RestartRequired'),
                          subresource='status')
        if self.changed_since(vm):
            return
        with apistatus.ignoring(409):
            self.store.create(model.VMI_RT, new_vmi(vm, paused))

    def changed_since(self, vm):
        """The VM's spec or requests changed since ``vm`` was read.

        A stop accepted meanwhile must not be answered by a VMI started
        from the stale copy; the change has queued another sync.
        """
        current = self.store.get_ref(model.VM_RT, vm['metadata'][
            'namespace'], vm['metadata']['name'])
        return current is None or model.deleting(current) or (
            current['spec'] != vm['spec']) or (
            model.first_request(current) != model.first_request(vm))

    def stop_vmi(self, vmi):
        if model.deleting(vmi):
            return
        with apistatus.ignoring(404):
            self.store.delete(model.VMI_RT, vmi['metadata']['namespace'],
                              vmi['metadata']['name'])

    def append_start_request(self, vm):
        def change(obj):
            status = obj.setdefault('status', {})
            status['stateChangeRequests'] = (
                (status.get('stateChangeRequests') or [])
                + [{'action': 'Start'}])
        self.store.mutate(model.VM_RT, vm['metadata']['namespace'],
                          vm['metadata']['name'], change,
                          subresource='status')

    def update_status(self, ns, name, vmi):
        dvs = {}

        def change(vm):
            template = vm['spec'].get('template', {})
            for dv in model.dv_names(template.get('spec')):
                if dv not in dvs:
                    dvs[dv] = self.store.try_get(cdi.DV_RT, ns, dv)
            vmstatus.compute_status(vm, vmi, dvs)
        with apistatus.ignoring(404):
            self.store.mutate(model.VM_RT, ns, name, change,
                              subresource='status')


def legacy_firmware_uuid(name):
    """virt-controller's CalculateLegacyUUID: UUIDv5 of the VM's name."""
    return str(uuid.uuid5(LEGACY_UUID_NAMESPACE, name))


def _firmware(vm):
    spec = (vm['spec'].get('template') or {}).get('spec') or {}
    return (spec.get('domain') or {}).get('firmware') or {}


def new_vmi(vm, paused=False):
    """The VMI virt-controller creates from ``vm``'s template."""
    meta = vm['metadata']
    template = copy.deepcopy(vm['spec']['template'])
    tmeta = template.get('metadata') or {}
    spec = template.get('spec') or {}
    efi = (((spec.get('domain') or {}).get('firmware') or {})
           .get('bootloader') or {}).get('efi')
    if efi is not None:
        efi.setdefault('secureBoot', True)
    if paused:
        spec['startStrategy'] = 'Paused'
    annotations = dict(tmeta.get('annotations') or {})
    annotations[model.ANN_GENERATION] = str(meta.get('generation', 1))
    annotations[model.ANN_TEMPLATE_HASH] = model.template_hash(vm)
    labels = dict(tmeta.get('labels') or {})
    return {'apiVersion': '%s/%s' % (model.GROUP, model.VERSION),
            'kind': 'VirtualMachineInstance',
            'metadata': {'name': meta['name'], 'namespace': meta['namespace'],
                         'labels': labels, 'annotations': annotations,
                         'finalizers': list(FINALIZERS),
                         'ownerReferences': [cdi.owner_ref(vm)]},
            'spec': spec}
