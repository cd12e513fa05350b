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

"""Garbage collection by ownerReferences (background propagation).

Deleting an object deletes, on the scheduler, every object whose
``ownerReferences`` name its uid.
"""

import threading

from sushy_kubevirt.simulator import apistatus


class OwnerGC:
    """Background-propagation garbage collection by ownerReferences."""

    def __init__(self, store, scheduler):
        self._store = store
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._dependents = {}   # owner uid -> {(rt, ns, name)}
        self._owners = {}       # (rt.key, ns, name) -> (rt, owner uids)

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
        for dep in orphans:
            self._scheduler.call_later(
                0, lambda dep=dep: self._delete(*dep),
                key=('gc', dep[0].key) + dep[1:])

    def _delete(self, rt, namespace, name):
        with apistatus.ignoring(404):
            self._store.delete(rt, namespace, name)
