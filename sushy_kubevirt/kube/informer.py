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

"""Reflector + store + handlers + read-your-writes overlay.

Mirrors client-go's SharedIndexInformer with a MutationCache: objects this
process wrote are overlaid on the cache until the watch delivers that
resourceVersion or a newer one, so a read right after a write sees it;
objects it deleted read as absent (a delete marker) until the watch
shows the deletion.
Handlers are called from a :class:`~sushy_kubevirt.kube.dispatcher.
Dispatcher` thread, which may be shared with other informers.
"""

import copy
import logging
import threading

from sushy_kubevirt.kube import accounting
from sushy_kubevirt.kube import indexer
from sushy_kubevirt.kube import reflector
from sushy_kubevirt.kube import resources

LOG = logging.getLogger(__name__)

#: Annotations the drivers never read (and that can be large).
DROPPED_ANNOTATIONS = ('kubectl.kubernetes.io/last-applied-configuration',)


class _Deleted:
    """Overlay of an object this process deleted: it reads as absent.

    ``uid`` and ``rv`` are those of its last state known to the cache.
    """

    __slots__ = ('uid', 'rv')

    def __init__(self, obj):
        self.uid = obj['metadata'].get('uid')
        self.rv = _rv(obj)

    def settled_by(self, kind, obj):
        """Whether the cache now shows the deletion (or a later object).

        ``kind`` is the watch event type, None after a relist (``obj``
        None: absent from the list). The DELETED event of the object
        deleted settles it, and so does an object with another uid that
        is newer than the deleted one (created after the deletion); the
        late events of an older object of the same name do not.
        """
        if obj is None:
            return True
        if obj['metadata'].get('uid') == self.uid:
            return kind == 'DELETED'
        return _newer(_rv(obj), self.rv)


def strip(obj):
    """Drop ``metadata.managedFields`` and unused annotations (idempotent).

    Returns a new top-level dict and metadata; the rest is shared.
    """
    meta = dict(obj.get('metadata') or {})
    meta.pop('managedFields', None)
    annotations = meta.get('annotations')
    if annotations and any(a in annotations for a in DROPPED_ANNOTATIONS):
        meta['annotations'] = {k: v for k, v in annotations.items()
                               if k not in DROPPED_ANNOTATIONS}
    return dict(obj, metadata=meta)


def _rv(obj):
    return obj['metadata'].get('resourceVersion')


def _not_older(new_rv, old_rv):
    """Whether resourceVersion ``new_rv`` is at least as recent as ``old_rv``.

    resourceVersions are opaque, but etcd's are integers and client-go's
    MutationCache compares them so; fall back to inequality.
    """
    try:
        return int(new_rv) >= int(old_rv)
    except (TypeError, ValueError):
        return new_rv != old_rv


def _newer(new_rv, old_rv):
    """Whether ``new_rv`` is strictly more recent than ``old_rv``."""
    return _not_older(new_rv, old_rv) and new_rv != old_rv


class Informer:
    """One resource in one namespace (or all namespaces).

    :param dispatcher: a :class:`~sushy_kubevirt.kube.dispatcher.Dispatcher`
        that calls the handlers; the caller starts and stops it.
    :param on_replace: ``fn(objs)`` with each list, before the store
        holds it, on the reflector thread (which it holds up).
    :param keep: ``fn(obj)``: whether to cache an object (and pass on its
        events); it must not change over the object's life (e.g. its
        namespace). None: every object.
    """

    def __init__(self, api, resource, dispatcher, namespace=None,
                 label_selector=None, indexers=None, transform=strip,
                 timings=None, name=None, on_replace=None, keep=None):
        self.resource = resource
        self.namespace = namespace
        self.store = indexer.Store(indexers)
        self.transform = transform
        self.keep = keep or (lambda obj: True)
        self.reflector = reflector.Reflector(
            api, resource, self._replace, self._event, namespace=namespace,
            label_selector=label_selector, timings=timings, name=name,
            page=self.page)
        #: Guards the store, the overlay and the handler list, so that the
        #: events queued follow the store's changes in order. Reentrant:
        #: :meth:`held` lets a caller add handlers while holding it.
        self._lock = threading.RLock()
        self._overlay = {}
        self._synced = threading.Event()
        self._handlers = ()
        self._dispatcher = dispatcher
        self._on_replace = on_replace

    # lifecycle

    def add_handler(self, fn):
        """Call ``fn(event_type, obj)`` for every change, on the dispatcher.

        Like client-go's ``AddEventHandler``: once synced, the objects in
        the store are first replayed to ``fn`` as ADDED, before any later
        event; before that, ``fn`` receives the first list as ADDED.
        Objects gone after a relist arrive as DELETED with their last
        known state.
        """
        with self._lock:
            self._handlers += (fn,)
            if self._synced.is_set():
                for obj in self.store.list():
                    self._dispatcher.put((fn,), 'ADDED', obj)

    def held(self):
        """This informer's lock: no event is queued while it is held.

        The dispatcher's queue is unbounded, so holding it never waits
        for a handler.
        """
        return self._lock

    def start(self):
        self.reflector.start()

    def stop(self, timeout=10.0):
        self.reflector.stop(timeout)

    def has_synced(self):
        """True once the first list is in the store."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout=None):
        return self._synced.wait(timeout)

    def health(self):
        """An :class:`~sushy_kubevirt.kube.accounting.Health` record."""
        r = self.reflector
        refused = self.refusal() is not None
        return accounting.Health(self.resource.plural, self.namespace or '',
                                 self.has_synced() and not refused,
                                 r.relists, r.watch_restarts, r.rv_age(),
                                 refused)

    def refusal(self):
        """The 403 the server answered the last list or watch, else None.

        Synced or not: once access is revoked the cache is no longer kept
        current, so it must not be served. Cleared by the next list or
        watch the server accepts; a restarted server's first 403s are not
        a refusal yet (:meth:`Reflector.refused`).
        """
        return self.reflector.refused()

    # reads

    def get(self, namespace, name):
        key = resources.key(namespace, name)
        with self._lock:
            return self._resolve(key, self.store.get(key))

    def list(self):
        with self._lock:
            if not self._overlay:
                return self.store.list()
            objs = {k: self._resolve(k, self.store.get(k))
                    for k in set(self.store.keys()) | set(self._overlay)}
        return [o for o in objs.values() if o is not None]

    def by_index(self, index, value):
        with self._lock:
            found = self.store.by_index(index, value)
            if not self._overlay:
                return found
            return self.matching([resources.object_key(o) for o in found],
                                 index, value)

    def matching(self, keys, index, value):
        """The objects read now whose ``index`` yields ``value``.

        Those of ``keys`` (found in the index, maybe earlier: each is
        checked again) that this informer holds, and the writes overlaid
        on its cache.
        """
        values = self.store.index_values
        with self._lock:
            keys = set(keys)
            keys.update(k for k, o in self._overlay.items()
                        if not isinstance(o, _Deleted))
            objs = [self._resolve(k, self.store.get(k)) for k in keys]
        return [o for o in objs if o is not None and value in values(index, o)]

    def has_overlay(self):
        """Whether a write of this process is overlaid on the cache."""
        return bool(self._overlay)

    def _resolve(self, key, cached):
        written = self._overlay.get(key)
        if written is None:
            return cached
        return None if isinstance(written, _Deleted) else written

    # read-your-writes

    def note_write(self, obj):
        """Overlay ``obj``, the response of a write, on the cache.

        Unless the cache (or the overlay) already holds that
        resourceVersion or a newer one.
        """
        obj = self.transform(copy.deepcopy(obj))
        key = resources.object_key(obj)
        with self._lock:
            for known in (self.store.get(key), self._overlay.get(key)):
                if isinstance(known, dict) and \
                        _not_older(_rv(known), _rv(obj)):
                    return
            self._overlay[key] = obj

    def note_delete(self, namespace, name):
        """Read ``namespace/name`` as absent until the watch catches up.

        Nothing to do when the cache already reads it as absent: the
        watch delivered the deletion before the answer came (the caller
        deleted an object it read from this cache).
        """
        key = resources.key(namespace, name)
        with self._lock:
            known = self._resolve(key, self.store.get(key))
            if known is not None:
                self._overlay[key] = _Deleted(known)

    def _settle(self, key, kind, obj, rv):
        """Drop the overlay of ``key`` once the cache caught up with it.

        ``kind`` is the watch event type (None after a relist at ``rv``;
        ``obj`` None when the list does not have ``key``). As client-go's
        MutationCache, an overlay survives every event older than the
        write it holds: a late DELETED of the object a new one (same
        name) replaced must not hide the new one.
        """
        written = self._overlay.get(key)
        if written is None:
            return
        if isinstance(written, _Deleted):
            done = written.settled_by(kind, obj)
        else:
            done = _not_older(_rv(obj) if obj else rv, _rv(written))
        if done:
            del self._overlay[key]

    # reflector callbacks (reflector thread), and live lists

    def page(self, items):
        """A page of a list as it arrives: what the cache keeps, stripped.

        Only these are held until the list ends (client-go transforms each
        object before storing it: ``SetTransform``).
        """
        return [self.transform(o) for o in items if self.keep(o)]

    def _replace(self, objs, rv):
        if self._on_replace is not None:
            self._on_replace(objs)
        put = self._dispatcher.put
        with self._lock:
            added, updated, deleted = self.store.replace(objs)
            for key in list(self._overlay):
                self._settle(key, None, self.store.get(key), rv)
            for obj in added:
                put(self._handlers, 'ADDED', obj)
            for old, obj in updated:
                if _rv(old) != _rv(obj):
                    put(self._handlers, 'MODIFIED', obj)
            for obj in deleted:
                put(self._handlers, 'DELETED', obj)
            first = not self._synced.is_set()
            self._synced.set()
        if first:
            LOG.info('%s: synced %d objects at resourceVersion %s',
                     self.reflector.name, len(objs), rv)

    def _event(self, kind, obj):
        if not self.keep(obj):
            return
        obj = self.transform(obj)
        key = resources.object_key(obj)
        with self._lock:
            if kind == 'DELETED':
                self.store.delete(key)
            else:
                self.store.upsert(obj)
            self._settle(key, kind, obj, _rv(obj))
            self._dispatcher.put(self._handlers, kind, obj)
