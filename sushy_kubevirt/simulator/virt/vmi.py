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

"""Simulated VMI lifecycle (what virt-handler and the guest would do).

A VMI walks Pending -> Scheduling -> Scheduled -> Running after the stage
delays (waiting in Pending until its DataVolumes are ready), shuts down
over its grace period once deleted, and its guest agent connects a stage
delay after the guest boots. Times are simulated (``clock.Clock``).
"""

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator.virt import conditions
from sushy_kubevirt.simulator.virt import model

DEFAULT_GRACE = 30
# virt-controller schedules a VMI; virt-handler (on the node) runs it.
CONTROLLER_PHASES = ('Pending', 'Scheduling', 'Scheduled')
NEXT_PHASE = {'': 'Pending', 'Pending': 'Scheduling',
              'Scheduling': 'Scheduled', 'Scheduled': 'Running'}
NODE = 'sim-node-0'
GUEST_OS_INFO = {'id': 'fedora', 'name': 'Fedora Linux',
                 'prettyName': 'Fedora Linux 40 (Cloud Edition)',
                 'version': '40 (Cloud Edition)', 'versionId': '40',
                 'kernelRelease': '6.8.5-301.fc40.x86_64',
                 'kernelVersion': '#1 SMP PREEMPT_DYNAMIC',
                 'machine': 'x86_64'}


class VMILifecycle:
    """Moves VMIs through their phases on the scheduler."""

    def __init__(self, store, scheduler, delays, guest_agent):
        self.store = store
        self.scheduler = scheduler
        self.clock = scheduler.clock
        self.delays = delays
        self.guest_agent = guest_agent  # default without the annotation
        self._entered = {}      # vmi uid -> (phase, sim time)
        self._shutdown = {}     # vmi uid -> sim time the shutdown began
        self._agent = {}        # vmi uid -> sim time the guest agent is up

    def enqueue(self, ns, name, delay=0.0):
        self.scheduler.call_later(delay, lambda: self.sync(ns, name),
                                  key=('vmi', ns, name))

    def forget(self, uid):
        """Drop the timers of a deleted VMI."""
        for timers in (self._entered, self._shutdown, self._agent):
            timers.pop(uid, None)

    def sync(self, ns, name):
        vmi = self.store.try_get(model.VMI_RT, ns, name)
        if vmi is None:
            return
        uid = vmi['metadata']['uid']
        if model.deleting(vmi):
            self.shut_down(vmi)
            return
        phase = model.phase_of(vmi)
        if phase == 'Running':
            self.sync_agent(vmi)
            return
        target = NEXT_PHASE.get(phase)
        if target is None:
            return
        if target == 'Scheduling' and not self.volumes_ready(vmi):
            return
        entered_phase, entered = self._entered.get(uid, (None, 0.0))
        if entered_phase != phase:
            entered = self.clock.now()
            self._entered[uid] = (phase, entered)
        remaining = entered + self.delays[target] - self.clock.now()
        if remaining > 0:
            self.enqueue(ns, name, remaining)
            return
        self._entered[uid] = (target, self.clock.now())
        self.enter(vmi, target)

    def sync_agent(self, vmi):
        """Connect the guest agent a stage delay after the guest booted.

        The guest boots once the VMI runs unpaused; a softreboot restarts
        the wait (the agent drops while the guest reboots).
        """
        uid = vmi['metadata']['uid']
        if (not model.has_agent(vmi, self.guest_agent)
                or conditions.condition(vmi, 'AgentConnected')
                or conditions.has_true(vmi, 'Paused')):
            return
        due = self._agent.setdefault(
            uid, self.clock.now() + self.delays['AgentConnected'])
        remaining = due - self.clock.now()
        if remaining > 0:
            self.enqueue(vmi['metadata']['namespace'],
                         vmi['metadata']['name'], remaining)
            return

        def connect(status):
            if status.get('phase') != 'Running':
                return
            conditions.put(status, conditions.agent_connected())
            status['guestOSInfo'] = dict(GUEST_OS_INFO)
        self.set_status(vmi, connect)

    def reboot_guest(self, vmi):
        """The VMI survives a guest reboot; its agent drops meanwhile."""
        self._agent.pop(vmi['metadata']['uid'], None)
        self.set_status(vmi, lambda status: conditions.drop(
            status, 'AgentConnected'))

    def volumes_ready(self, vmi):
        ns = vmi['metadata']['namespace']
        waiting = [dv for dv in model.dv_names(vmi['spec'])
                   if model.phase_of(self.store.try_get(cdi.DV_RT, ns, dv))
                   != 'Succeeded']
        if waiting:
            cond = conditions.make('DataVolumesReady', 'False',
                                   'NotAllDVsReady',
                                   'Not all of the VMI\'s DVs are ready')
        else:
            cond = conditions.make(
                'DataVolumesReady', 'True', 'AllDVsReady',
                'All of the VMI\'s DVs are bound and ready')
        self.set_status(vmi, lambda status: conditions.put(status, cond))
        return not waiting

    def shut_down(self, vmi):
        """Finish a deleted VMI after its (simulated) grace period."""
        uid = vmi['metadata']['uid']
        ns, name = vmi['metadata']['namespace'], vmi['metadata']['name']
        if not model.is_final(vmi):
            grace = vmi['spec'].get('terminationGracePeriodSeconds')
            grace = DEFAULT_GRACE if grace is None else grace
            if self.delays.get('Shutdown') is not None:
                grace = min(grace, self.delays['Shutdown'])
            if model.phase_of(vmi) not in ('Scheduled', 'Running'):
                grace = 0
            began = self._shutdown.setdefault(uid, self.clock.now())
            remaining = began + grace - self.clock.now()
            if remaining > 0:
                self.enqueue(ns, name, remaining)
                return
            self.enter(vmi, 'Succeeded')
        self.mutate(vmi, lambda o: o['metadata'].__setitem__(
            'finalizers', []))

    def enter(self, vmi, phase):
        manager = ('virt-controller' if phase in CONTROLLER_PHASES
                   else 'virt-handler')
        self.set_status(vmi, lambda status: enter_phase(vmi, status, phase),
                        manager)

    def set_status(self, vmi, fn, manager='virt-handler'):
        """``fn(status)`` on this very VMI (same uid), if it still exists."""
        self.mutate(vmi, lambda o: fn(o.setdefault('status', {})),
                    manager=manager)

    def mutate(self, vmi, fn, subresource=None, manager='virt-handler'):
        uid = vmi['metadata']['uid']

        def change(obj):
            if obj['metadata']['uid'] == uid:
                fn(obj)
        with apistatus.ignoring(404):
            self.store.mutate(model.VMI_RT, vmi['metadata']['namespace'],
                              vmi['metadata']['name'], change,
                              subresource=subresource, manager=manager)


def guest_ends(store, namespace, name, phase):
    """The guest powers off (``Succeeded``) or crashes (``Failed``)."""
    store.mutate(model.VMI_RT, namespace, name,
                 lambda vmi: enter_phase(vmi, vmi['status'], phase),
                 manager='virt-handler')


def enter_phase(vmi, status, phase):
    """Write what virt-controller/virt-handler report on entering phase."""
    if status.get('phase') in model.FINAL:
        return
    status['phase'] = phase
    status.setdefault('phaseTransitionTimestamps', []).append(
        {'phase': phase, 'phaseTransitionTimestamp': storage.now_iso()})
    if phase == 'Pending':
        status.setdefault('guestOSInfo', {})
        status['qosClass'] = 'Burstable'
    elif phase == 'Scheduled':
        status['nodeName'] = NODE
    elif phase == 'Running':
        status['interfaces'] = interfaces_status(vmi)
        conditions.put(status, conditions.make('Ready', 'True'))
        if vmi['spec'].get('startStrategy') == 'Paused':
            conditions.pause(status)
    elif phase in model.FINAL:
        conditions.put(status, conditions.make('Ready', 'False',
                                               'PodTerminating'))
        conditions.drop(status, 'Paused')
        conditions.drop(status, 'AgentConnected')


def interfaces_status(vmi):
    meta = vmi['metadata']
    result = []
    for idx, iface in enumerate(
            vmi['spec'].get('domain', {}).get('devices', {})
            .get('interfaces') or ()):
        name = iface.get('name', 'default')
        ip = model.stable_ip(meta['namespace'], meta['name'], name)
        result.append({
            'name': name, 'interfaceName': 'eth%d' % idx,
            'mac': iface.get('macAddress') or model.stable_mac(
                meta['namespace'], meta['name'], name),
            'ipAddress': ip, 'ipAddresses': [ip], 'queueCount': 1,
            'infoSource': 'domain, guest-agent',
            # virt-handler: the domain's link, up unless set down.
            'linkState': 'down' if iface.get('state') == 'down' else 'up'})
    return result
