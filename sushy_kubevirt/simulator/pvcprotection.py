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

"""PVC protection, as kube-controller-manager's pvc-protection controller.

Every PVC carries the ``kubernetes.io/pvc-protection`` finalizer. A PVC
being deleted keeps it while a scheduled pod uses the claim; here, the
virt-launcher pod of a VirtualMachineInstance in phase Scheduled or
Running (or shutting down from one) whose volumes name it. The finalizer
goes once no such VMI is left, and the PVC with it.
"""

from sushy_kubevirt.simulator import apistatus

FINALIZER = 'kubernetes.io/pvc-protection'
PVC_KEY = '/persistentvolumeclaims'
VMI_KEY = 'kubevirt.io/virtualmachineinstances'
#: VMI phases with a scheduled virt-launcher pod.
MOUNTED = ('Scheduled', 'Running')


def claims(vmi):
    """The claims a VMI's volumes name (DataVolumes name their PVC)."""
    for vol in (vmi.get('spec') or {}).get('volumes') or ():
        claim = ((vol.get('dataVolume') or {}).get('name')
                 or (vol.get('persistentVolumeClaim') or {}).get('claimName'))
        if claim:
            yield claim


def mounts(vmi, claim):
    """True when ``vmi``'s pod holds ``claim``."""
    return ((vmi.get('status') or {}).get('phase') in MOUNTED
            and claim in claims(vmi))


class PVCProtection:
    """Adds the finalizer; removes it from unused PVCs being deleted."""

    def __init__(self, store, scheduler):
        self._store = store
        self._scheduler = scheduler

    def on_event(self, event, rt, obj, old):
        meta = obj.get('metadata') or {}
        namespace = meta.get('namespace')
        if rt.key == PVC_KEY and event != 'DELETED':
            held = FINALIZER in (meta.get('finalizers') or ())
            if held == bool(meta.get('deletionTimestamp')):
                self._later(rt, namespace, meta.get('name'))
        elif rt.key == VMI_KEY and (
                event == 'DELETED'
                or (obj.get('status') or {}).get('phase') not in MOUNTED):
            rt_pvc = self._store.resource('', 'persistentvolumeclaims')
            for claim in claims(obj):
                self._later(rt_pvc, namespace, claim)

    def _later(self, rt, namespace, name):
        self._scheduler.call_later(
            0, lambda: self._sync(rt, namespace, name),
            key=('pvc-protection', namespace, name))

    def _in_use(self, namespace, name):
        try:
            vmi_rt = self._store.resource('kubevirt.io',
                                          'virtualmachineinstances')
        except KeyError:
            return False
        return any(mounts(vmi, name)
                   for vmi in self._store.list(vmi_rt, namespace)[0])

    def _sync(self, rt, namespace, name):
        pvc = self._store.try_get(rt, namespace, name)
        if pvc is None:
            return
        meta = pvc['metadata']
        held = FINALIZER in (meta.get('finalizers') or ())
        deleting = bool(meta.get('deletionTimestamp'))
        if held != deleting or (deleting and self._in_use(namespace, name)):
            return
        uid = meta['uid']

        def change(obj):
            found = obj['metadata'].get('finalizers') or []
            if obj['metadata']['uid'] != uid:
                return
            if deleting:
                obj['metadata']['finalizers'] = [
                    f for f in found if f != FINALIZER]
            elif FINALIZER not in found:
                obj['metadata']['finalizers'] = found + [FINALIZER]
        with apistatus.ignoring(404):
            self._store.mutate(rt, namespace, name, change)
