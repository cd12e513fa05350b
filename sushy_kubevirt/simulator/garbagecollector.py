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

"""Garbage collection by ownerReferences, as kube-controller-manager's.

Deleting an owner deletes (on the scheduler) every object whose
``ownerReferences`` name its uid (background propagation). An owner
deleted with ``propagationPolicy: Foreground`` carries the
``foregroundDeletion`` finalizer: its dependents are deleted first, then
the finalizer goes. With ``Orphan`` it carries ``orphan``: the references
to it are removed from its dependents, then the finalizer goes.
"""

import threading

from sushy_kubevirt.simulator import apistatus

FOREGROUND = 'foregroundDeletion'
ORPHAN = 'orphan'
PROPAGATION_FINALIZERS = {'Foreground': FOREGROUND, 'Orphan': ORPHAN,
                          'Background': None}


class OwnerGC:
    """Garbage collection of dependents by ownerReferences."""

    def __init__(self, store, scheduler):
        self._store = store
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._dependents = {}   # owner uid -> {(rt, ns, name)}
        self._owners = {}       # (rt.key, ns, name) -> (rt, owner uids)
        self._waiting = {}      # owner uid -> (rt, ns, name) in foreground

    def on_event(self, event, rt, obj, old):
        meta = obj.get('metadata') or {}
        key = (rt.key, meta.get('namespace'), meta.get('name'))
        ref = (rt, meta.get('namespace'), meta.get('name'))
        uids = () if event == 'DELETED' else tuple(
            r.get('uid') for r in meta.get('ownerReferences') or ())
        with self._lock:
            _rt, previous = self._owners.pop(key, (None, ()))
            for uid in previous:
                self._dependents.get(uid, set()).discard(ref)
            if uids:
                self._owners[key] = (rt, uids)
                for uid in uids:
                    self._dependents.setdefault(uid, set()).add(ref)
            orphans = (self._dependents.pop(meta.get('uid'), set())
                       if event == 'DELETED' else ())
            owners = [self._waiting[uid] for uid in previous
                      if uid in self._waiting]
        for dep in orphans:
            self._later(('gc', dep[0].key) + dep[1:],
                        lambda dep=dep: self._delete(*dep))
        finalizers = meta.get('finalizers') or ()
        if event != 'DELETED' and meta.get('deletionTimestamp'):
            if FOREGROUND in finalizers:
                with self._lock:
                    self._waiting[meta['uid']] = ref
                self._later(('fg',) + key, lambda: self._foreground(*ref))
            elif ORPHAN in finalizers:
                self._later(('orphan',) + key, lambda: self._orphan(*ref))
        for owner in owners:
            self._later(('fg', owner[0].key) + owner[1:],
                        lambda owner=owner: self._foreground(*owner))

    def _later(self, key, fn):
        self._scheduler.call_later(0, fn, key=key)

    def _dependents_of(self, uid):
        with self._lock:
            return list(self._dependents.get(uid, ()))

    def _delete(self, rt, namespace, name):
        with apistatus.ignoring(404):
            self._store.delete(rt, namespace, name)

    def _foreground(self, rt, namespace, name):
        """Delete the dependents; once none is left, drop the finalizer."""
        owner = self._store.get_ref(rt, namespace, name)
        if owner is None:
            return
        uid = owner['metadata']['uid']
        dependents = self._dependents_of(uid)
        for dep in dependents:
            self._delete(*dep)
        if not self._dependents_of(uid):
            with self._lock:
                self._waiting.pop(uid, None)
            self._drop_finalizer(rt, namespace, name, FOREGROUND)

    def _orphan(self, rt, namespace, name):
        owner = self._store.get_ref(rt, namespace, name)
        if owner is None:
            return
        uid = owner['metadata']['uid']

        def unlink(obj):
            refs = [r for r in obj['metadata'].get('ownerReferences') or ()
                    if r.get('uid') != uid]
            if refs:
                obj['metadata']['ownerReferences'] = refs
            else:
                obj['metadata'].pop('ownerReferences', None)
        for dep in self._dependents_of(uid):
            with apistatus.ignoring(404):
                self._store.mutate(*dep, unlink)
        self._drop_finalizer(rt, namespace, name, ORPHAN)

    def _drop_finalizer(self, rt, namespace, name, finalizer):
        def drop(obj):
            obj['metadata']['finalizers'] = [
                f for f in obj['metadata'].get('finalizers') or ()
                if f != finalizer]
            if not obj['metadata']['finalizers']:
                del obj['metadata']['finalizers']
        with apistatus.ignoring(404):
            self._store.mutate(rt, namespace, name, drop)
