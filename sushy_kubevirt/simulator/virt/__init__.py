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

"""KubeVirt for the simulator: VMs and VMIs, controllers, subresources.

``install(sim)`` registers ``kubevirt.io/v1`` VirtualMachines and
VirtualMachineInstances, the VM admission webhook (``admission``) and the
``subresources.kubevirt.io/v1`` actions, and starts the controllers on one
scheduler thread. The parts:

``model``          resource types, annotations, pure VM/VMI queries
``conditions``     status conditions
``vm``             virt-controller's VM controller (creates/deletes VMIs)
``vmstatus``       the VM status it writes (printableStatus, conditions)
``vmi``            simulated VMI phases, shutdown and guest agent
``subresources``   virt-api's start/stop/restart, pause/unpause/softreboot

The Events virt-controller, virt-handler and CDI record are written by
:mod:`sushy_kubevirt.simulator.recorder`.
"""

from sushy_kubevirt.simulator import admission
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import recorder
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator.virt import conditions
from sushy_kubevirt.simulator.virt import model
from sushy_kubevirt.simulator.virt import subresources
from sushy_kubevirt.simulator.virt import vm
from sushy_kubevirt.simulator.virt import vmi

__all__ = ['ANN_GUEST_AGENT', 'DEFAULT_DELAYS', 'GROUP', 'VMI_RT', 'VM_RT',
           'condition', 'guest_ends', 'install', 'run_strategy',
           'stable_mac']

ANN_GUEST_AGENT = model.ANN_GUEST_AGENT
GROUP = model.GROUP
VM_RT = model.VM_RT
VMI_RT = model.VMI_RT
condition = conditions.condition
guest_ends = vmi.guest_ends
run_strategy = model.run_strategy
stable_mac = model.stable_mac

# Field managers, as the KubeVirt components' user agents name them.
VIRT_API = 'virt-api'
VIRT_CONTROLLER = 'virt-controller'
DEFAULT_DELAYS = {'Pending': 0.0, 'Scheduling': 0.2, 'Scheduled': 0.3,
                  'Running': 0.5, 'Shutdown': None, 'AgentConnected': 0.5}


class KubeVirt:
    """Routes store events to the VM controller and the VMI lifecycle."""

    def __init__(self, sim):
        self.sim = sim
        self.store = sim.store
        delays, self.scheduler = clock.for_controller(
            sim, DEFAULT_DELAYS, 'sim-kubevirt')
        self.vms = vm.VMController(
            storage.Manager(self.store, VIRT_CONTROLLER), self.scheduler)
        self.vmis = vmi.VMILifecycle(self.store, self.scheduler, delays,
                                     bool(sim.guest_agent))
        self._dv_users = {}     # (ns, dv name) -> {vm/vmi name}
        self.recorder = recorder.Recorder(sim)

    def start(self):
        self.store.register(VM_RT)
        self.store.register(VMI_RT)
        admission.register(self.sim, VM_RT, VMI_RT)
        subresources.Subresources(storage.Manager(self.store, VIRT_API),
                                  self.vmis).register(self.sim)
        self.store.subscribe(self.on_event, loaded=self.on_loaded)
        self.scheduler.start()
        self.recorder.start()
        return self

    def stop(self):
        self.scheduler.stop()
        self.recorder.stop()

    def on_event(self, event, rt, obj, old):
        meta = obj.get('metadata') or {}
        ns, name = meta.get('namespace'), meta.get('name')
        if rt.key == VM_RT.key:
            template = (obj.get('spec') or {}).get('template') or {}
            self._index(ns, name, template.get('spec'))
            self.vms.enqueue(ns, name)
        elif rt.key == VMI_RT.key:
            if event == 'DELETED':
                self.vmis.forget(meta.get('uid'))
            self._index(ns, name, obj.get('spec'))
            self.vmis.enqueue(ns, name)
            self.vms.enqueue(ns, name)
        elif rt.key == cdi.DV_RT.key:
            for user in list(self._dv_users.get((ns, name), ())):
                self.vms.enqueue(ns, user)
                self.vmis.enqueue(ns, user)
            for ref in meta.get('ownerReferences') or ():
                if ref.get('kind') == 'VirtualMachine':
                    self.vms.enqueue(ns, ref.get('name'))

    def on_loaded(self, rt, obj):
        """A restored (settled) VM: only index its DataVolumes."""
        if rt.key == VM_RT.key:
            meta = obj['metadata']
            template = (obj.get('spec') or {}).get('template') or {}
            self._index(meta.get('namespace'), meta.get('name'),
                        template.get('spec'))

    def _index(self, ns, name, spec):
        """Remember which VMs/VMIs use which DataVolumes."""
        for dv in model.dv_names(spec):
            self._dv_users.setdefault((ns, dv), set()).add(name)


def install(sim):
    """Register VMs/VMIs, admission and subresources; start controllers."""
    return KubeVirt(sim).start()
