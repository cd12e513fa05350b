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

"""Namespace lifecycle: the registry's rules and the namespace controller.

A namespace is created with ``spec.finalizers: [kubernetes]``, phase
``Active`` and the label ``kubernetes.io/metadata.name``. Deleting it
sets ``deletionTimestamp`` and phase ``Terminating`` (the answer is the
namespace); creating in it is then 403. The controller deletes every
object in it and, once none is left (finalizers may hold some), deletes
the namespace.
"""

import threading

from sushy_kubevirt.simulator import apistatus

NAME_LABEL = 'kubernetes.io/metadata.name'
FINALIZER = 'kubernetes'


def prepare(new, old):
    """The namespace strategy's defaults on an API create or update."""
    meta = new['metadata']
    meta['labels'] = dict(meta.get('labels') or {},
                          **{NAME_LABEL: meta['name']})
    if old is None:
        spec = new.setdefault('spec', {})
        spec.setdefault('finalizers', [FINALIZER])
        new['status'] = {'phase': 'Active'}
    else:
        new['status'] = old.get('status') or {'phase': 'Active'}


def mark_terminating(obj):
    """``store.delete``'s ``terminate``: the namespace is Terminating."""
    obj['status'] = dict(obj.get('status') or {}, phase='Terminating')


def terminating(rt, namespace, name):
    """403 for a create in a terminating namespace."""
    return apistatus.ApiError(
        403, 'Forbidden', '%s "%s" is forbidden: unable to create new '
        'content in namespace %s because it is being terminated'
        % (apistatus.qualified_resource(rt), name, namespace),
        {'name': name, 'group': rt.group, 'kind': rt.plural},
        causes=[{'reason': 'NamespaceTerminating',
                 'message': 'namespace %s is being terminated' % namespace,
                 'field': 'metadata.namespace'}])


class NamespaceController:
    """Empties terminating namespaces, then deletes them."""

    def __init__(self, store, scheduler, rt):
        self._store = store
        self._scheduler = scheduler
        self._rt = rt
        self._lock = threading.Lock()
        self._terminating = set()

    def on_event(self, event, rt, obj, old):
        meta = obj.get('metadata') or {}
        if rt.key == self._rt.key:
            name = meta.get('name')
            with self._lock:
                if event != 'DELETED' and meta.get('deletionTimestamp'):
                    self._terminating.add(name)
                else:
                    self._terminating.discard(name)
                    return
        else:
            name = meta.get('namespace')
            with self._lock:
                if name not in self._terminating:
                    return
        self._scheduler.call_later(0, lambda: self._sync(name),
                                   key=('namespace', name))

    def _sync(self, name):
        remaining = 0
        for rt in self._store.resources():
            if not rt.namespaced:
                continue
            for obj in self._store.snapshot(rt, name)[0]:
                remaining += 1
                if not obj['metadata'].get('deletionTimestamp'):
                    with apistatus.ignoring(404):
                        self._store.delete(rt, name, obj['metadata']['name'])
        if not remaining:
            with apistatus.ignoring(404):
                self._store.delete(self._rt, None, name)
