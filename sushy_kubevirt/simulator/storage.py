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

"""Object store: one global resourceVersion, bounded history, watchers.

Types with a structural schema (``set_schema``) are pruned, defaulted and
validated on every write, from the API or from a controller, before the
commit; a controller's write of an unknown field is logged (it is a
simulator bug). Each write records its field manager in managedFields;
controllers write through a ``Manager``, which names theirs.

Stored objects are never mutated in place: every write stores a new dict,
so history events and watchers can share references without copying.
Callers outside this module get copies (``get``, ``list``) or read-only
references (``snapshot``, ``view``, watch events). Objects are indexed in
key order, copy-on-write, and the states continue tokens refer to are
kept (``index``), so a list page is a range read.
"""

import collections
import dataclasses
import logging
import random
import threading
import time
import uuid

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import fieldmanager
from sushy_kubevirt.simulator import index
from sushy_kubevirt.simulator import schemas

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ResourceType:
    """One served resource (``group`` is '' for the core group).

    ``custom``: a custom resource (a CRD's); built-in types have no
    ``metadata.generation`` and list without an empty ``continue``.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status_subresource: bool = True
    short_names: tuple = ()
    custom: bool = True

    @property
    def key(self):
        return '%s/%s' % (self.group, self.plural)

    @property
    def api_version(self):
        return '%s/%s' % (self.group, self.version) if self.group \
            else self.version

    @property
    def singular(self):
        return self.kind.lower()


class Event:
    """A committed write.

    ``obj`` is the new state (for DELETED the last state carrying the
    deletion RV), ``old`` the previous state or None.
    """

    __slots__ = ('rv', 'type', 'rt', 'obj', 'old', 'cache', 'settled')

    def __init__(self, rv, type_, rt, obj, old, settled=False):
        self.rv = rv
        self.type = type_
        self.rt = rt
        self.obj = obj
        self.old = old
        self.cache = {}  # serialisations, filled by the API server
        self.settled = settled   # loaded: nothing to reconcile

    @property
    def namespace(self):
        return self.obj['metadata'].get('namespace')


def clone(value):
    """Deep copy of JSON-like data (faster than copy.deepcopy).

    managedFields' ``fieldsV1`` trees are shared, not copied: nothing
    changes one in place (``fieldmanager`` builds new ones).
    """
    if isinstance(value, dict):
        return {k: v if k == 'fieldsV1' else clone(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


_UIDS = random.Random()   # uids need only be unique: no entropy per call
_NOW = [None, '']          # the last second formatted, and its text


def new_uid():
    """A random (version 4) UUID string."""
    return str(uuid.UUID(int=_UIDS.getrandbits(128), version=4))


def now_iso():
    second = int(time.time())
    cached = _NOW
    if cached[0] != second:
        cached[:] = [second, time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                           time.gmtime(second))]
    return cached[1]


def _without(obj, *keys):
    return {k: v for k, v in obj.items() if k not in keys}


def _comparable(obj):
    """The parts of an object a write can change, minus bookkeeping.

    managedFields count without their times: a write that changes only
    those is a no-op, as kube-apiserver makes it.
    """
    meta = _without(obj.get('metadata', {}), 'resourceVersion',
                    'managedFields')
    meta['managedFields'] = [_without(e, 'time') for e in
                             obj.get('metadata', {}).get('managedFields')
                             or ()]
    return dict(obj, metadata=meta)


class Watcher:
    """One watch on a resource type (optionally a namespace).

    ``next(timeout)`` returns the next :class:`Event`, a Status dict for
    an in-stream error (then the watcher is closed), or None on timeout
    or when closed.
    """

    def __init__(self, store, rt, namespace, min_rv):
        self._store = store
        self.rt = rt
        self.namespace = namespace
        self.min_rv = min_rv
        self.queue = collections.deque()
        self.closed = False
        self.error = None
        self.too_large_deadline = None

    def accepts(self, event):
        return (event.rt.key == self.rt.key and event.rv > self.min_rv and
                (self.namespace is None or
                 event.namespace == self.namespace))

    def next(self, timeout):
        cond = self._store._cond
        deadline = time.monotonic() + timeout
        with cond:
            while True:
                if self.queue:
                    return self.queue.popleft()
                if self.error is not None:
                    error, self.error = self.error, None
                    self.closed = True
                    return error
                if self.closed:
                    return None
                now = time.monotonic()
                if (self.too_large_deadline is not None and
                        self.min_rv > self._store._rv):
                    if now >= self.too_large_deadline:
                        self.error = apistatus.too_large_resource_version(
                            self.min_rv, self._store._rv).to_status()
                        continue
                    wait_until = min(deadline, self.too_large_deadline)
                else:
                    wait_until = deadline
                if now >= deadline:
                    return None
                cond.wait(max(0.0, wait_until - now))

    def close(self):
        with self._store._cond:
            self.closed = True
            self._store._watchers.discard(self)
            self._store._cond.notify_all()


class Store:
    """In-memory objects with kube-apiserver's write and watch rules."""

    def __init__(self, *, start_rv=1_000_000, history_size=10_000,
                 watch_backlog_limit=None):
        self._cond = threading.Condition(threading.RLock())
        self._rv = start_rv
        self._compacted_rv = start_rv
        self._history = collections.deque()
        self.history_size = history_size
        self.watch_backlog_limit = watch_backlog_limit
        self._types = {}
        self._type_rv = {}   # per type: the watch cache's progress
        self._schemas = {}
        self._objects = {}    # type key -> index.Index
        self._snapshots = index.Snapshots()
        self._watchers = set()
        self._subscribers = []
        self._pending = collections.deque()
        self._dispatch_lock = threading.RLock()

    # -- registry ---------------------------------------------------------

    def register(self, rt):
        with self._cond:
            self._types[rt.key] = rt
            self._objects.setdefault(rt.key, index.Index())
            self._type_rv.setdefault(rt.key, self._rv)

    def resource(self, group, plural):
        return self._types['%s/%s' % (group, plural)]

    def resources(self):
        return list(self._types.values())

    def subscribe(self, fn, loaded=None):
        """``fn(event_type, rt, obj, old)`` for every write, in order.

        Objects committed by ``load`` go to ``loaded(rt, obj)`` instead
        (a controller indexes them; nothing is left to reconcile).
        """
        self._subscribers.append((fn, loaded))

    # -- reads ------------------------------------------------------------

    @property
    def resource_version(self):
        return self._rv

    @property
    def compacted_resource_version(self):
        return self._compacted_rv

    @property
    def condition(self):
        return self._cond

    def try_get(self, rt, namespace, name):
        with self._cond:
            obj = self._objects[rt.key].objs.get(
                self._key(rt, namespace, name))
            return None if obj is None else clone(obj)

    #: The stored object is the API's own: ``remote.RemoteStore``'s
    #: ``read_live`` GETs it from a real API server instead.
    read_live = try_get

    def get(self, rt, namespace, name):
        obj = self.try_get(rt, namespace, name)
        if obj is None:
            raise apistatus.not_found(rt, name)
        return obj

    def get_ref(self, rt, namespace, name):
        """The stored object itself (read-only) or None."""
        with self._cond:
            return self._objects[rt.key].objs.get(
                self._key(rt, namespace, name))

    def list(self, rt, namespace=None):
        items, rv = self.snapshot(rt, namespace)
        return [clone(o) for o in items], rv

    def snapshot(self, rt, namespace=None, resource_version=None):
        """Read-only stored objects in key order and the RV they reflect.

        With ``resource_version`` the state exactly at that RV (410 if it
        was compacted).
        """
        with self._cond:
            if resource_version in (None, self._rv):
                # Read under the lock: no need to share (copy-on-write).
                idx = self._objects[rt.key]
                snap = index.Snapshot(self._rv, idx.sorted_keys(), idx.objs)
            else:
                snap = self.view(rt, resource_version)
            return snap.items(namespace), snap.rv

    def view(self, rt, resource_version=None, keep=False):
        """``rt``'s :class:`index.Snapshot` now, or at ``resource_version``.

        An older state is rebuilt from history (410 if compacted, 504 if
        in the future); ``keep``: hold it for later pages of the list.
        """
        with self._cond:
            rv = self._rv
            if resource_version is None or resource_version == rv:
                snap = self._objects[rt.key].snapshot(rv)
            else:
                if resource_version < self._compacted_rv:
                    raise apistatus.gone(
                        'The resourceVersion for the provided list is too '
                        'old.')
                if resource_version > rv:
                    raise apistatus.too_large_resource_version(
                        resource_version, rv)
                snap = self._snapshots.get(rt.key, resource_version)
                if snap is not None:
                    return snap
                snap = self._rewind(rt, resource_version)
            if keep:
                self._snapshots.keep(rt.key, snap, self._compacted_rv)
            return snap

    def _rewind(self, rt, target_rv):
        current = self._objects[rt.key]
        objs = dict(current.objs)
        same_keys = True
        for event in reversed(self._history):
            if event.rv <= target_rv:
                break
            if event.rt.key != rt.key:
                continue
            meta = event.obj['metadata']
            key = (meta.get('namespace') or '', meta['name'])
            if event.old is None:
                objs.pop(key, None)
            else:
                objs[key] = event.old
            same_keys = same_keys and event.type == 'MODIFIED'
        keys = current.sorted_keys() if same_keys else sorted(objs)
        return index.Snapshot(target_rv, keys, objs)

    def type_resource_version(self, rt):
        """The RV a bookmark on ``rt`` carries.

        kube's watch cache for the type has seen events up to it: its last
        event, or the global RV as of its last consistent read
        (``sync_type``).
        """
        with self._cond:
            return self._type_rv.get(rt.key, self._rv)

    def sync_type(self, rt):
        """A consistent read of ``rt``: its watch cache catches up."""
        with self._cond:
            self._type_rv[rt.key] = self._rv

    def wait_for_rv(self, rv, timeout):
        """Block until the store reached ``rv``; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._rv >= rv, timeout)

    # -- writes -----------------------------------------------------------

    @staticmethod
    def _key(rt, namespace, name):
        return ((namespace or '') if rt.namespaced else '', name)

    def set_schema(self, rt, schema):
        """Prune and validate writes of ``rt`` against ``schema``."""
        with self._cond:
            self._schemas[rt.key] = schema

    def schema(self, rt):
        return self._schemas.get(rt.key)

    def create(self, rt, obj, *, manager=None, operation='Update',
               unknown=None, validate=None):
        """Persist a new object; 409 AlreadyExists, 422 Invalid.

        ``unknown(paths)`` hears of pruned unknown fields (and may raise);
        ``validate(new, old)`` runs after the schema check (may raise).
        """
        new = clone(obj)
        meta = new.setdefault('metadata', {})
        if not meta.get('name') and meta.get('generateName'):
            meta['name'] = meta['generateName'] + uuid.uuid4().hex[:5]
        if not meta.get('name'):
            raise apistatus.invalid(rt, '', [apistatus.field_cause(
                'metadata.name', 'FieldValueRequired',
                'Required value: name or generateName is required')])
        if not rt.namespaced:
            meta.pop('namespace', None)
        elif not meta.get('namespace'):
            raise apistatus.bad_request(
                'the server could not find the requested resource')
        new['apiVersion'] = rt.api_version
        new['kind'] = rt.kind
        self._check_schema(rt, new, unknown)
        if validate is not None:
            validate(new, None)
        if operation != 'Apply' and (manager or
                                     not meta.get('managedFields')):
            # Outside the lock: the fields owned do not depend on the store.
            fieldmanager.update(rt, new, None, manager or 'sushy-kubevirt-sim',
                                schema=self._schemas.get(rt.key),
                                now=now_iso())
        with self._cond:
            key = self._key(rt, meta.get('namespace'), meta['name'])
            if key in self._objects[rt.key].objs:
                raise apistatus.already_exists(rt, meta['name'])
            meta['uid'] = new_uid()
            meta['creationTimestamp'] = now_iso()
            if rt.custom:
                meta['generation'] = 1
            else:
                meta.pop('generation', None)
            for stale in ('deletionTimestamp', 'deletionGracePeriodSeconds',
                          'resourceVersion'):
                meta.pop(stale, None)
            self._commit('ADDED', rt, key, new, None)
        self._dispatch()
        return clone(new)

    def update(self, rt, obj, *, subresource=None, manager=None,
               unknown=None, validate=None):
        """PUT semantics: 422 without RV, 409 on a stale RV."""
        meta = obj.get('metadata') or {}
        name = meta.get('name', '')
        if not meta.get('resourceVersion'):
            raise apistatus.resource_version_required(rt, name)
        with self._cond:
            current = self._require(rt, meta.get('namespace'), name)
            if meta['resourceVersion'] != \
                    current['metadata']['resourceVersion']:
                raise apistatus.conflict(rt, name)
            result = self._persist(rt, current, clone(obj), subresource,
                                   manager, 'Update', unknown, validate)
        self._dispatch()
        return clone(result)

    def mutate(self, rt, namespace, name, fn, *, subresource=None,
               manager=None, operation='Update', unknown=None,
               validate=None):
        """Apply ``fn(copy)`` to the current object atomically and persist.

        If ``fn`` sets a different ``metadata.resourceVersion`` the write
        fails with 409, as a patch carrying a resourceVersion does.
        """
        with self._cond:
            current = self._require(rt, namespace, name)
            new = clone(current)
            fn(new)
            rv = (new.get('metadata') or {}).get('resourceVersion')
            if rv and rv != current['metadata']['resourceVersion']:
                raise apistatus.conflict(rt, name)
            result = self._persist(rt, current, new, subresource, manager,
                                   operation, unknown, validate)
        self._dispatch()
        return clone(result)

    def delete(self, rt, namespace, name, *, uid=None, resource_version=None,
               finalizer=None, terminate=None):
        """Delete, or mark for deletion when finalizers are present.

        ``finalizer`` (the garbage collector's ``foregroundDeletion`` or
        ``orphan``) is added first. ``terminate(obj)``: only mark it
        (``deletionTimestamp``, then ``terminate`` changes it), as a
        namespace's deletion does. Returns the last state; it still
        exists iff it has finalizers or was only marked.
        """
        with self._cond:
            current = self._require(rt, namespace, name)
            cmeta = current['metadata']
            if finalizer and not cmeta.get('deletionTimestamp') and \
                    finalizer not in (cmeta.get('finalizers') or ()):
                cmeta = dict(cmeta, finalizers=list(
                    cmeta.get('finalizers') or ()) + [finalizer])
            if uid and uid != cmeta['uid']:
                raise apistatus.precondition_failed(rt, name, _precondition(
                    'UID', uid, cmeta['uid'], 'deleted and then recreated'))
            if resource_version and \
                    resource_version != cmeta['resourceVersion']:
                raise apistatus.precondition_failed(rt, name, _precondition(
                    'ResourceVersion', resource_version,
                    cmeta['resourceVersion'], 'modified'))
            key = self._key(rt, namespace, name)
            if terminate is not None:
                if cmeta.get('deletionTimestamp'):
                    return clone(current)
                new = clone(current)
                new['metadata']['deletionTimestamp'] = now_iso()
                terminate(new)
                result = self._commit('MODIFIED', rt, key, new, current)
            elif cmeta.get('finalizers'):
                if cmeta.get('deletionTimestamp'):
                    return clone(current)
                new = dict(current, metadata=dict(
                    cmeta, deletionTimestamp=now_iso(),
                    deletionGracePeriodSeconds=0))
                if 'generation' in cmeta:   # as the registry store does
                    new['metadata']['generation'] = cmeta['generation'] + 1
                result = self._commit('MODIFIED', rt, key, new, current)
            else:
                result = self._commit('DELETED', rt, key, None, current)
        self._dispatch()
        return clone(result)

    def load(self, items):
        """Commit ``(rt, obj)`` pairs as a restore does (bulk seeding).

        Each object, complete with uid, timestamps and managedFields, is
        stored as it is (no schema check, no field management) with its
        own RV and ADDED event; subscribers get it as ``loaded``.
        """
        with self._cond:
            for rt, obj in items:
                meta = obj['metadata']
                key = self._key(rt, meta.get('namespace'), meta['name'])
                if key in self._objects[rt.key].objs:
                    raise apistatus.already_exists(rt, meta['name'])
                self._commit('ADDED', rt, key, obj, None, settled=True)
        self._dispatch()

    def compact(self):
        """Drop all history: older RVs now get 410."""
        with self._cond:
            self._history.clear()
            self._compacted_rv = self._rv

    # -- watch ------------------------------------------------------------

    def watch(self, rt, namespace=None, resource_version=None,
              too_large_wait=3.0):
        """Register a watcher.

        RV None/''/'0': synthetic ADDED for every object, then live.
        RV N: history after N then live; 410 ERROR if N was compacted;
        504 ERROR after ``too_large_wait`` if N is in the future.
        """
        with self._cond:
            if resource_version in (None, '', '0', 0):
                watcher = Watcher(self, rt, namespace, self._rv)
                for obj in self.snapshot(rt, namespace)[0]:
                    watcher.queue.append(Event(
                        int(obj['metadata']['resourceVersion']), 'ADDED',
                        rt, obj, None))
            else:
                rv = int(resource_version)
                watcher = Watcher(self, rt, namespace, rv)
                if rv < self._compacted_rv:
                    watcher.error = apistatus.gone(
                        'too old resource version: %d (%d)'
                        % (rv, self._compacted_rv)).to_status()
                    return watcher
                if rv > self._rv:
                    watcher.too_large_deadline = (time.monotonic() +
                                                  too_large_wait)
                for event in self._history:
                    if watcher.accepts(event):
                        watcher.queue.append(event)
            self._watchers.add(watcher)
            return watcher

    def close_watchers(self):
        """End every watch (as an API server restart does)."""
        with self._cond:
            for watcher in self._watchers:
                watcher.closed = True
            self._watchers.clear()
            self._cond.notify_all()

    # -- internals ----------------------------------------------------------

    def _require(self, rt, namespace, name):
        obj = self._objects[rt.key].objs.get(self._key(rt, namespace, name))
        if obj is None:
            raise apistatus.not_found(rt, name)
        return obj

    def _check_schema(self, rt, new, unknown):
        schema = self._schemas.get(rt.key)
        if schema is not None:
            paths, causes = schema.check(new)
        elif rt.custom:
            paths, causes = schemas.prune_metadata(new), []
        else:
            return
        if paths:
            if unknown is None:
                LOG.warning('pruned unknown fields of %s %s: %s', rt.kind,
                            new['metadata'].get('name'), ', '.join(paths))
            else:
                unknown(paths)
        if causes:
            raise apistatus.invalid(rt, new['metadata'].get('name', ''),
                                    causes)

    def _persist(self, rt, current, new, subresource, manager,
                 operation='Update', unknown=None, validate=None):
        cmeta = current['metadata']
        if subresource == 'status':
            new = dict(current, status=new.get('status'))
            if new['status'] is None:
                del new['status']
            new['metadata'] = dict(cmeta)
        else:
            meta = new.setdefault('metadata', {})
            for fixed in ('uid', 'creationTimestamp', 'name', 'namespace',
                          'deletionTimestamp', 'deletionGracePeriodSeconds',
                          'generation'):
                if fixed in cmeta:
                    meta[fixed] = cmeta[fixed]
                else:
                    meta.pop(fixed, None)
            new['apiVersion'] = rt.api_version
            new['kind'] = rt.kind
            if rt.status_subresource:
                new.pop('status', None)
                if 'status' in current:
                    new['status'] = current['status']
        self._check_schema(rt, new, unknown)
        if validate is not None:
            validate(new, current)
        if subresource != 'status' and 'generation' in cmeta and \
                _without(new, 'metadata') != _without(current, 'metadata'):
            new['metadata']['generation'] = cmeta['generation'] + 1
        if manager and operation != 'Apply':
            fieldmanager.update(rt, new, current, manager, subresource,
                                self._schemas.get(rt.key), now_iso())
        if _comparable(new) == _comparable(current):
            return current
        meta = new['metadata']
        key = self._key(rt, meta.get('namespace'), meta['name'])
        if meta.get('deletionTimestamp') and not meta.get('finalizers'):
            # The last finalizer went: deleted; the answer is the update
            # (at the RV it was made on), the event the stored state.
            self._commit('DELETED', rt, key, None, current)
            return dict(new, metadata=dict(
                meta, resourceVersion=cmeta['resourceVersion']))
        return self._commit('MODIFIED', rt, key, new, current)

    def _commit(self, type_, rt, key, new, old, settled=False):
        """Stamp a new RV, store, record history, fan out. Lock held."""
        self._rv += 1
        rv = self._rv
        if type_ == 'DELETED':
            obj = dict(old, metadata=dict(old['metadata'],
                                          resourceVersion=str(rv)))
            self._objects[rt.key].pop(key)
        else:
            obj = new
            obj['metadata']['resourceVersion'] = str(rv)
            self._objects[rt.key].put(key, obj)
        event = Event(rv, type_, rt, obj, old, settled)
        self._type_rv[rt.key] = rv
        self._history.append(event)
        while len(self._history) > self.history_size:
            self._compacted_rv = self._history.popleft().rv
        limit = self.watch_backlog_limit
        for watcher in list(self._watchers):
            if watcher.accepts(event):
                watcher.queue.append(event)
                if limit is not None and len(watcher.queue) > limit:
                    watcher.queue.clear()
                    watcher.closed = True
                    self._watchers.discard(watcher)
        self._pending.append(event)
        self._cond.notify_all()
        return obj

    def _dispatch(self):
        """Call subscribers for committed events, in commit order."""
        if not self._subscribers:
            with self._cond:
                self._pending.clear()
            return
        with self._dispatch_lock:
            while True:
                with self._cond:
                    if not self._pending:
                        return
                    event = self._pending.popleft()
                for fn, loaded in self._subscribers:
                    if not event.settled:
                        fn(event.type, event.rt, event.obj, event.old)
                    elif loaded is not None:
                        loaded(event.rt, event.obj)


def _precondition(what, want, have, might):
    return ('the %s in the precondition (%s) does not match the %s in '
            'record (%s). The object might have been %s'
            % (what, want, what, have, might))


class Manager:
    """The store as one field manager (a controller) writes to it."""

    def __init__(self, store, name):
        self.store = store
        self.name = name

    def create(self, rt, obj, **kwargs):
        return self.store.create(rt, obj, manager=self.name, **kwargs)

    def update(self, rt, obj, **kwargs):
        return self.store.update(rt, obj, manager=self.name, **kwargs)

    def mutate(self, rt, namespace, name, fn, **kwargs):
        return self.store.mutate(rt, namespace, name, fn, manager=self.name,
                                 **kwargs)

    def __getattr__(self, attr):
        return getattr(self.store, attr)
