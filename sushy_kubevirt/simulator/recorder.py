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
"""The Events KubeVirt's and CDI's controllers record, as they word them.

Derived from the store's changes (old and new object), written as core
``v1`` Events in the object's namespace, one per occurrence:

* VirtualMachine (virt-controller): ``SuccessfulCreate`` when its VMI is
  created, ``SuccessfulDelete`` when it is deleted;
* VirtualMachineInstance: ``SuccessfulCreate`` (its virt-launcher pod,
  virt-controller), ``Started``, ``ShuttingDown`` and ``Stopped``
  (virt-handler);
* DataVolume (CDI): ``ImportScheduled``, ``ImportInProgress``,
  ``ImportSucceeded`` and, a Warning, ``ImportFailed``.

They are written from the recorder's own scheduler thread, never from
the store's callback. As kube-apiserver's ``--event-ttl`` bounds the
Events, the recorder keeps at most :data:`MAX_EVENTS` of its own: the
oldest is deleted past that. Driving a real API server, the controllers
write their Events there as well. A store without Events records none.
"""

import collections
import hashlib
import itertools
import time

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator.virt import model

VM_CONTROLLER = 'virtualmachine-controller'
VMI_CONTROLLER = 'virtualmachineinstance-controller'
HANDLER = 'virt-handler'
CDI_CONTROLLER = 'datavolume-import-controller'
#: Most Events the recorder keeps (its oldest are deleted).
MAX_EVENTS = 10000
_DV_PHASES = {
    'ImportScheduled': ('Normal', 'ImportScheduled',
                        'Import into %s scheduled'),
    'ImportInProgress': ('Normal', 'ImportInProgress',
                         'Import into %s in progress'),
    'Succeeded': ('Normal', 'ImportSucceeded',
                  'Successfully imported into PVC %s'),
    'Failed': ('Warning', 'ImportFailed', 'Failed to import into PVC %s'),
}


def _phase(obj):
    return ((obj or {}).get('status') or {}).get('phase', '')


def _pod(vmi):
    meta = vmi['metadata']
    suffix = hashlib.sha256(meta.get('uid', '').encode()).hexdigest()[:5]
    return 'virt-launcher-%s-%s' % (meta['name'], suffix)


def vm_events(event, vmi, old):
    """``[(kind, name, type, reason, message, component)]`` of a VMI write.

    What virt-controller records on its VM and VMI, and virt-handler on
    the VMI.
    """
    meta = vmi['metadata']
    name = meta['name']
    found = []
    owner = next((r['name'] for r in meta.get('ownerReferences') or ()
                  if r.get('kind') == 'VirtualMachine'), None)
    if event == 'ADDED':
        if owner:
            found.append(('VirtualMachine', owner, 'Normal',
                          'SuccessfulCreate', 'Started the virtual machine '
                          'by creating the new virtual machine instance %s'
                          % name, VM_CONTROLLER))
        found.append(('VirtualMachineInstance', name, 'Normal',
                      'SuccessfulCreate', 'Created virtual machine pod %s'
                      % _pod(vmi), VMI_CONTROLLER))
    if event == 'DELETED':
        return found
    phase, before = _phase(vmi), _phase(old)
    if phase == 'Running' and before != 'Running':
        found.append(('VirtualMachineInstance', name, 'Normal', 'Started',
                      'VirtualMachineInstance started.', HANDLER))
    if model.deleting(vmi) and not model.deleting(old):
        if owner:
            found.append(('VirtualMachine', owner, 'Normal',
                          'SuccessfulDelete', 'Stopped the virtual machine '
                          'by deleting the virtual machine instance %s'
                          % meta.get('uid'), VM_CONTROLLER))
        if phase in ('Scheduled', 'Running'):
            found.append(('VirtualMachineInstance', name, 'Normal',
                          'ShuttingDown', 'Signaled Graceful Shutdown',
                          HANDLER))
    if phase in model.FINAL and before not in model.FINAL and \
            before in ('Scheduled', 'Running'):
        found.append(('VirtualMachineInstance', name, 'Normal', 'Stopped',
                      'The VirtualMachineInstance was shut down.', HANDLER))
    return found


def dv_events(event, dv, old):
    """The CDI import Events of a DataVolume write."""
    phase = _phase(dv)
    if event == 'DELETED' or phase == _phase(old) or phase not in _DV_PHASES:
        return []
    if phase == 'Succeeded' and not (dv.get('spec') or {}).get(
            'source', {}).get('http'):
        return []   # a blank or settled volume imports nothing
    type_, reason, text = _DV_PHASES[phase]
    return [('DataVolume', dv['metadata']['name'], type_, reason,
             text % dv['metadata']['name'], CDI_CONTROLLER)]


def event_body(namespace, kind, name, type_, reason, message, source):
    """A core ``v1`` Event of one occurrence, as client-go's recorder."""
    stamp = storage.now_iso()
    group = 'cdi.kubevirt.io/v1beta1' if kind == 'DataVolume' \
        else model.GROUP + '/v1'
    return {
        'apiVersion': 'v1', 'kind': 'Event',
        'metadata': {'name': '%s.%x' % (name, time.time_ns()),
                     'namespace': namespace},
        'involvedObject': {'apiVersion': group, 'kind': kind,
                           'name': name, 'namespace': namespace},
        'reason': reason, 'message': message, 'type': type_,
        'source': source,
        'firstTimestamp': stamp, 'lastTimestamp': stamp, 'count': 1,
        'reportingComponent': '', 'reportingInstance': ''}


class Recorder:
    """Writes the Events of VM, VMI and DataVolume changes."""

    def __init__(self, sim):
        self.store = sim.store
        try:
            self.events = sim.store.resource('', 'events')
        except KeyError:    # a store of chosen types, without Events
            self.events = None
        _delays, self.scheduler = clock.for_controller(sim, {},
                                                       'sim-events')
        self._seq = itertools.count()
        self._written = collections.deque()

    def start(self):
        self.store.subscribe(self.on_event)
        self.scheduler.start()
        return self

    def stop(self):
        self.scheduler.stop()

    def on_event(self, event, rt, obj, old):
        if self.events is None:
            return
        if rt.key == model.VMI_RT.key:
            found = vm_events(event, obj, old)
        elif rt.key == cdi.DV_RT.key:
            found = dv_events(event, obj, old)
        else:
            return
        namespace = obj['metadata'].get('namespace')
        for record in found:
            self.scheduler.call_later(
                0, lambda r=record: self.write(namespace, *r),
                key=('event', next(self._seq)))

    def write(self, namespace, kind, name, type_, reason, message,
              component):
        body = event_body(namespace, kind, name, type_, reason, message,
                          {'component': component})
        with apistatus.ignoring(409, 404):
            self.store.create(self.events, body, manager=component)
            self._written.append((namespace, body['metadata']['name']))
        while len(self._written) > MAX_EVENTS:
            with apistatus.ignoring(404):
                self.store.delete(self.events, *self._written.popleft())
