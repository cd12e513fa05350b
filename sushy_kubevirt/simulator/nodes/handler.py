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

"""virt-handler's part, and the guest's: a scheduled VMI runs.

The real virt-controller hands a VMI over as ``Scheduled`` with its
``nodeName`` once its virt-launcher pod runs. On a simulated node it then
runs (``Running``, its interfaces, a stage delay later), its guest agent
connects if it has one, and once deleted it shuts down over its grace
period (at most the ``Shutdown`` stage delay) and ends ``Succeeded``.
``pause``, ``unpause``, ``softreboot`` and ``reset`` are virt-api's calls
to the handler (``handlerapi``). Every write goes as
``system:serviceaccount:kubevirt:kubevirt-handler``, whose store this is,
as KubeVirt's own KWOK work impersonates virt-handler, and it records
virt-handler's Events: ``ShuttingDown`` when it signals the guest,
``Started`` and ``Stopped`` (a Warning when the guest crashed) on the
phase changes it writes.
"""

import contextlib
import logging

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import recorder
from sushy_kubevirt.simulator.virt import conditions
from sushy_kubevirt.simulator.virt import model
from sushy_kubevirt.simulator.virt import vmi as simvmi

LOG = logging.getLogger(__name__)

DEFAULT_GRACE = 30
CONFLICT_RETRIES = 5
#: virt-handler's Events on the phases it writes: (type, reason, message).
PHASE_EVENTS = {
    'Running': ('Normal', 'Started', 'VirtualMachineInstance started.'),
    'Succeeded': ('Normal', 'Stopped',
                  'The VirtualMachineInstance was shut down.'),
    'Failed': ('Warning', 'Stopped', 'The VirtualMachineInstance crashed.'),
}


class Handler:
    """Runs, reboots and shuts down the VMIs of the simulated nodes."""

    def __init__(self, store, scheduler, nodes, delays, guest_agent):
        self.store = store
        self.scheduler = scheduler
        self.clock = scheduler.clock
        self.nodes = nodes
        self.delays = delays
        self.guest_agent = guest_agent
        self._since = {}    # (vmi uid, what) -> sim time it began

    def enqueue(self, ns, name, delay=0.0):
        self.scheduler.call_later(delay, lambda: self.sync(ns, name),
                                  key=('vmi', ns, name))

    def on_event(self, event, rt, obj, old):
        if rt.key == model.VMI_RT.key:
            meta = obj['metadata']
            self.enqueue(meta['namespace'], meta['name'])

    def _due(self, vmi, what, delay):
        """Sim seconds until ``what`` is due for this VMI (<= 0: now)."""
        key = (vmi['metadata']['uid'], what)
        began = self._since.setdefault(key, self.clock.now())
        remaining = began + delay - self.clock.now()
        if remaining > 0:
            self.enqueue(vmi['metadata']['namespace'],
                         vmi['metadata']['name'], remaining)
        return remaining

    def sync(self, ns, name):
        vmi = self.store.try_get(model.VMI_RT, ns, name)
        if vmi is None or (vmi.get('status') or {}).get(
                'nodeName') not in self.nodes:
            return
        phase = model.phase_of(vmi)
        if phase in model.FINAL:
            return
        if model.deleting(vmi):
            self._shut_down(vmi)
        elif phase == 'Scheduled':
            if self._due(vmi, 'Running', self.delays['Running']) <= 0:
                self.set_status(vmi, lambda st: running(vmi, st))
        elif phase == 'Running':
            self._sync_agent(vmi)

    def _shut_down(self, vmi):
        grace = vmi['spec'].get('terminationGracePeriodSeconds')
        grace = DEFAULT_GRACE if grace is None else grace
        if self.delays.get('Shutdown') is not None:
            grace = min(grace, self.delays['Shutdown'])
        if (vmi['metadata']['uid'], 'Shutdown') not in self._since:
            self.record(vmi, 'Normal', 'ShuttingDown',
                        'Signaled Graceful Shutdown')
        if self._due(vmi, 'Shutdown', grace) <= 0:
            self.set_status(vmi, lambda st: simvmi.enter_phase(
                vmi, st, 'Succeeded'))

    def _sync_agent(self, vmi):
        if (not model.has_agent(vmi, self.guest_agent)
                or conditions.condition(vmi, 'AgentConnected')
                or conditions.has_true(vmi, 'Paused')):
            return
        if self._due(vmi, 'AgentConnected',
                     self.delays['AgentConnected']) > 0:
            return

        def connect(status):
            if status.get('phase') == 'Running':
                conditions.put(status, conditions.agent_connected())
                status['guestOSInfo'] = dict(simvmi.GUEST_OS_INFO)
        self.set_status(vmi, connect)

    # -- virt-api's calls (handlerapi) ---------------------------------------

    def act(self, ns, name, action):
        """Pause, unpause, soft-reboot or reset a running VMI.

        :returns: ``(HTTP status, message)`` as virt-handler answers.
        """
        vmi = self.store.try_get(model.VMI_RT, ns, name)
        if vmi is None or model.phase_of(vmi) != 'Running':
            return 409, 'VMI %s/%s is not running' % (ns, name)
        uid = vmi['metadata']['uid']
        if action == 'pause':
            self.set_status(vmi, lambda st: conditions.put(
                st, conditions.paused()))
        elif action == 'unpause':
            self.set_status(vmi, lambda st: conditions.drop(st, 'Paused'))
        elif action == 'softreboot' and (vmi['spec'].get('domain') or {}).get(
                'rebootPolicy') == 'Terminate':
            # libvirt's on_reboot=destroy: the guest's reboot ends the VMI.
            self.set_status(vmi, lambda st: simvmi.enter_phase(
                vmi, st, 'Succeeded'))
        elif action in ('softreboot', 'reset'):
            # The guest reboots: its agent drops, and connects again later.
            self._since.pop((uid, 'AgentConnected'), None)
            self.set_status(vmi, lambda st: conditions.drop(
                st, 'AgentConnected'))
        else:
            return 404, 'no such action %r' % action
        self.enqueue(ns, name)
        return 202, ''

    def guest_ends(self, ns, name, phase):
        """The guest powers off (``Succeeded``) or crashes (``Failed``)."""
        vmi = self.store.try_get(model.VMI_RT, ns, name)
        if vmi is not None:
            self.set_status(vmi, lambda st: simvmi.enter_phase(
                vmi, st, phase))

    def set_status(self, vmi, fn):
        """``fn(status)`` on this very VMI (same uid), if it still exists.

        virt-handler may update VMIs but not get them: it writes its
        cached copy, and after a 409 Conflict waits until its watch has
        the newer one (``CONFLICT_RETRIES`` times at most).
        """
        uid = vmi['metadata']['uid']
        ns, name = vmi['metadata']['namespace'], vmi['metadata']['name']
        for _ in range(CONFLICT_RETRIES):
            current = self.store.try_get(model.VMI_RT, ns, name)
            if current is None or current['metadata']['uid'] != uid:
                return
            before = model.phase_of(current)
            fn(current.setdefault('status', {}))
            try:
                with apistatus.ignoring(404):
                    self.store.update(model.VMI_RT, current,
                                      manager='virt-handler')
                    if model.phase_of(current) != before and \
                            model.phase_of(current) in PHASE_EVENTS:
                        self.record(current, *PHASE_EVENTS[
                            model.phase_of(current)])
                return
            except apistatus.ApiError as exc:
                if exc.code != 409:
                    raise
            rv = current['metadata']['resourceVersion']
            with contextlib.suppress(TimeoutError):
                clock.wait_for(lambda: (self.store.get_ref(
                    model.VMI_RT, ns, name) or {}).get('metadata', {}).get(
                        'resourceVersion') != rv, 1.0)

    def record(self, vmi, type_, reason, message):
        """Write one Event on ``vmi``, as virt-handler's recorder."""
        meta = vmi['metadata']
        body = recorder.event_body(
            meta['namespace'], 'VirtualMachineInstance', meta['name'],
            type_, reason, message, {'component': 'virt-handler',
                                     'host': vmi['status'].get('nodeName')})
        body['involvedObject']['uid'] = meta['uid']
        try:
            self.store.request('POST', '/api/v1/namespaces/%s/events'
                               % meta['namespace'], body=body)
        except apistatus.ApiError as exc:
            # Best effort, as client-go's recorder: an Event refused (the
            # namespace terminating, a quota) must not stop the VMI's sync.
            LOG.debug('Event %s on %s/%s not recorded: %s', reason,
                      meta['namespace'], meta['name'], exc)

    def forget(self, uid):
        for key in [k for k in self._since if k[0] == uid]:
            del self._since[key]


def running(vmi, status):
    """What virt-handler reports once the domain runs."""
    if status.get('phase') != 'Scheduled':
        return
    simvmi.enter_phase(vmi, status, 'Running')
    machine = vmi['spec'].get('domain', {}).get('machine') or {}
    status.setdefault('machine', {'type': machine.get('type', 'q35')})
    status.setdefault('migrationMethod', 'BlockMigration')
    status.setdefault('guestOSInfo', {})
