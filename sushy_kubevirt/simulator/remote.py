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

"""The part of ``storage.Store`` the controllers use, over a real API server.

``RemoteStore(kubeconfig)`` talks to a Kubernetes API server on loopback
through the official client (``ApiClient.call_api``). ``register`` starts
one list + watch thread per resource type (cluster-wide, with bookmarks; a
410 Gone relists, other errors retry the watch after a bounded backoff).
Reads (``try_get``, ``get``, ``get_ref``, ``list``) answer from that cache,
which also holds this process's own writes until the watch has caught up
with them, so a controller reads its writes as it does in the in-process
store. ``subscribe`` callbacks hear every change the watches see, one at
a time; a new subscriber first hears every cached object as ``ADDED``, and
a relist reports what changed meanwhile.

Writes are live: ``create`` (then the status, which a status subresource
drops on create), ``update``, ``mutate`` (GET, apply, PUT with the read
resourceVersion, retried on 409 Conflict) and ``delete``. Each
``ApiException`` becomes an ``apistatus.ApiError`` with the server's code,
reason, message and details.
"""

import ipaddress
import json
import logging
import random
import threading
import time
import urllib.parse

from kubernetes import client
from kubernetes import config
from kubernetes.watch import watch as kube_watch
import urllib3

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import storage

LOG = logging.getLogger(__name__)

REQUEST_TIMEOUT = 30.0
WATCH_SECONDS = 290          # timeoutSeconds of one watch request
CONNECT_TIMEOUT = 10.0
PAGE_SIZE = 500
MAX_PAGES = 10_000
CONFLICT_RETRIES = 10
CONFLICT_PAUSE = 0.01        # seconds, times the attempt, jittered
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 5.0
POOL_SIZE = 32               # watch threads hold a connection each


def api_client(kubeconfig, context=None):
    """An official-client ``ApiClient`` for a loopback API server."""
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), context=context,
                            client_configuration=cfg, persist_config=False)
    if not _loopback(urllib.parse.urlsplit(cfg.host).hostname or ''):
        raise ValueError('the API server must be on loopback, not %s'
                         % cfg.host)
    cfg.connection_pool_maxsize = POOL_SIZE
    return client.ApiClient(cfg)


def _loopback(host):
    try:
        return host == 'localhost' or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_error(exc):
    """The ``apistatus.ApiError`` for the client's ``ApiException``."""
    try:
        status = json.loads(exc.body or '')
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get('kind') == 'Status':
        return apistatus.ApiError(
            status.get('code') or exc.status, status.get('reason', ''),
            status.get('message', ''), details=status.get('details'),
            metadata=status.get('metadata'))
    code = exc.status or 503
    return apistatus.from_code(code, (exc.body or exc.reason or '').strip()
                               or 'HTTP %d' % code)


def _unavailable(exc):
    return apistatus.ApiError(503, 'ServiceUnavailable',
                              'the API server cannot be reached: %s' % exc)


def _key(rt, namespace, name):
    return ((namespace or '') if rt.namespaced else '', name)


def _key_of(rt, obj):
    meta = obj['metadata']
    return _key(rt, meta.get('namespace'), meta['name'])


def _uid(obj):
    return (obj.get('metadata') or {}).get('uid')


def _rv(obj):
    return (obj.get('metadata') or {}).get('resourceVersion')


def _newer(rv, than):
    """``rv`` is after ``than`` (etcd revisions; unknown: not newer)."""
    if than is None:
        return True
    try:
        return int(rv) > int(than)
    except (TypeError, ValueError):
        return False


def _decorate(rt, obj):
    """Items of a built-in list carry no apiVersion/kind; the store's do."""
    obj['apiVersion'] = rt.api_version
    obj['kind'] = rt.kind
    return obj


class _Expired(Exception):
    """The watch's resourceVersion is gone: relist."""


class _Tombstone:
    """An object this process deleted, until the watch shows it gone."""

    __slots__ = ('uid',)

    def __init__(self, uid):
        self.uid = uid

    def cleared_by(self, event, obj):
        """The watch shows this object deleted, or another one there."""
        if obj is None:
            return True
        same = self.uid in (None, _uid(obj))
        return not same or event == 'DELETED'


class _Informer:
    """One resource type: its list + watch thread and its cache."""

    def __init__(self, store, rt):
        self.store = store
        self.rt = rt
        self.lock = threading.Lock()
        self.seen = {}       # key -> the object as the watch last gave it
        self.written = {}    # key -> own write the watch has not shown yet
        self.rv = None       # where the watch resumes; None: relist
        self.synced = threading.Event()
        self.error = None    # the last failure, for wait_synced
        self.response = None
        self.thread = threading.Thread(target=self.run, daemon=True,
                                       name='remote-watch-' + rt.plural)

    # -- reads -------------------------------------------------------------

    def get(self, key):
        with self.lock:
            obj = self.written.get(key, self.seen.get(key))
        return None if isinstance(obj, _Tombstone) else obj

    def items(self, namespace=None):
        with self.lock:
            merged = dict(self.seen)
            merged.update(self.written)
            rv = self.rv
        keys = sorted(k for k, obj in merged.items()
                      if not isinstance(obj, _Tombstone)
                      and (namespace is None or k[0] == namespace))
        return [merged[k] for k in keys], rv

    # -- own writes ----------------------------------------------------------

    def remember(self, obj):
        """Read ``obj`` (a write's answer) until the watch passes it."""
        with self.lock:
            if _newer(_rv(obj), self.rv):
                self.written[_key_of(self.rt, obj)] = obj

    def deleted(self, key, uid):
        """Read the object as gone until the watch shows it gone."""
        with self.lock:
            seen = self.seen.get(key)
            if seen is not None and uid in (None, _uid(seen)):
                self.written[key] = _Tombstone(uid)
            else:
                self.written.pop(key, None)

    def _settle(self, key=None, event=None, obj=None):
        """Drop own writes the watch has caught up with. Lock held."""
        for wkey, wobj in list(self.written.items()):
            if isinstance(wobj, _Tombstone):
                if wkey == key and wobj.cleared_by(event, obj):
                    del self.written[wkey]
            elif not _newer(_rv(wobj), self.rv):
                del self.written[wkey]

    # -- list and watch ----------------------------------------------------

    def start(self):
        self.thread.start()

    def run(self):
        stopped = self.store.stopped
        delay = BACKOFF_FIRST
        while not stopped.is_set():
            try:
                if self.rv is None:
                    self.relist()
                self.watch()
                delay = BACKOFF_FIRST
            except _Expired:
                LOG.info('watch of %s expired: relisting', self.rt.key)
                self.rv = None
            except Exception as exc:  # noqa: broad: keep watching
                if stopped.is_set():
                    return
                self.error = exc
                LOG.warning('list/watch of %s failed, retrying in %.1f s: '
                            '%s', self.rt.key, delay, exc)
                stopped.wait(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    def relist(self):
        items, rv = [], None
        query = [('limit', PAGE_SIZE)]
        for _page in range(MAX_PAGES):
            try:
                page = self.store.request('GET', self.store.path(self.rt),
                                          query)
            except apistatus.ApiError as exc:
                if exc.code == 410:   # the continue token expired
                    raise _Expired() from None
                raise
            rv = rv or page['metadata']['resourceVersion']
            items += [_decorate(self.rt, obj) for obj in page['items']]
            token = page['metadata'].get('continue')
            if not token:
                break
            query = [('limit', PAGE_SIZE), ('continue', token)]
        self.replace(items, rv)

    def replace(self, items, rv):
        """Install a fresh list; report its differences as events."""
        fresh = {_key_of(self.rt, obj): obj for obj in items}
        with self.store.dispatch_lock:
            with self.lock:
                old = self.seen
                self.seen, self.rv = fresh, rv
                for key, wobj in list(self.written.items()):
                    if isinstance(wobj, _Tombstone) and wobj.cleared_by(
                            'LISTED', fresh.get(key)):
                        del self.written[key]
                self._settle()
            for key, obj in fresh.items():
                before = old.get(key)
                if before is None:
                    self.store.dispatch('ADDED', self.rt, obj, None)
                elif _rv(before) != _rv(obj):
                    self.store.dispatch('MODIFIED', self.rt, obj, before)
            for key in old.keys() - fresh.keys():
                self.store.dispatch('DELETED', self.rt, old[key], old[key])
        self.synced.set()
        self.error = None

    def watch(self):
        query = [('watch', 'true'), ('resourceVersion', self.rv),
                 ('allowWatchBookmarks', 'true'),
                 ('timeoutSeconds', WATCH_SECONDS)]
        response = self.store.stream(self.store.path(self.rt), query)
        self.response = response
        try:
            if self.store.stopped.is_set():
                return
            for line in kube_watch.iter_resp_lines(response):
                if line:
                    self.apply(json.loads(line))
        finally:
            self.response = None
            response.close()
            response.release_conn()

    def apply(self, event):
        kind, obj = event.get('type'), event.get('object') or {}
        if kind == 'ERROR':
            error = apistatus.ApiError(obj.get('code') or 500,
                                       obj.get('reason', ''),
                                       obj.get('message', ''))
            if error.code == 410:
                raise _Expired()
            raise error
        with self.store.dispatch_lock:
            with self.lock:
                self.rv = _rv(obj) or self.rv
                if kind == 'BOOKMARK':
                    self._settle()
                    return
                _decorate(self.rt, obj)
                key = _key_of(self.rt, obj)
                old = self.seen.get(key)
                if kind == 'DELETED':
                    self.seen.pop(key, None)
                else:
                    self.seen[key] = obj
                self._settle(key, kind, obj)
            self.store.dispatch(kind, self.rt, obj, old)

    def cut(self):
        """Interrupt a blocked watch read (stop)."""
        response = self.response
        if response is not None:
            try:
                response.shutdown()
            except OSError:
                pass


class RemoteStore:
    """``storage.Store``'s controller-facing API over a real API server."""

    def __init__(self, kubeconfig, *, context=None):
        self.api_client = api_client(kubeconfig, context)
        self.stopped = threading.Event()
        self.dispatch_lock = threading.RLock()
        self._lock = threading.Lock()
        self._types = {}
        self._informers = {}
        self._subscribers = []
        self._warned = set()

    # -- registry ---------------------------------------------------------

    def register(self, rt):
        """Watch ``rt`` (once per type)."""
        with self._lock:
            if rt.key in self._informers or self.stopped.is_set():
                return
            self._types[rt.key] = rt
            informer = self._informers[rt.key] = _Informer(self, rt)
        informer.start()

    def resource(self, group, plural):
        return self._types['%s/%s' % (group, plural)]

    def resources(self):
        return list(self._types.values())

    def subscribe(self, fn, loaded=None):
        """``fn(event_type, rt, obj, old)`` for every change, in order.

        The cached objects come first, as ``ADDED``. (``loaded``: this
        store never loads objects, see ``storage.Store.load``.)
        """
        with self.dispatch_lock:
            self._subscribers.append(fn)
            for informer in list(self._informers.values()):
                for obj in informer.items()[0]:
                    self._notify(fn, 'ADDED', informer.rt, obj, None)

    def dispatch(self, event, rt, obj, old):
        """Tell every subscriber (the caller holds ``dispatch_lock``)."""
        for fn in self._subscribers:
            self._notify(fn, event, rt, obj, old)

    @staticmethod
    def _notify(fn, event, rt, obj, old):
        try:
            fn(event, rt, obj, old)
        except Exception:  # noqa: broad: one subscriber must not stop all
            LOG.exception('subscriber failed on %s %s', event, rt.key)

    def wait_synced(self, timeout=60.0):
        """Block until every registered type has been listed."""
        deadline = time.monotonic() + timeout
        for informer in list(self._informers.values()):
            if not informer.synced.wait(max(0.0,
                                            deadline - time.monotonic())):
                raise TimeoutError('%s not listed in %.0f s: %s'
                                   % (informer.rt.key, timeout,
                                      informer.error))

    def stop(self, timeout=10.0):
        """End every watch thread (waiting at most ``timeout``)."""
        self.stopped.set()
        informers = list(self._informers.values())
        for informer in informers:
            informer.cut()
        deadline = time.monotonic() + timeout
        for informer in informers:
            if informer.thread.is_alive():
                informer.thread.join(max(0.0, deadline - time.monotonic()))
        self.api_client.close()

    # -- reads (the watch cache) -------------------------------------------

    def try_get(self, rt, namespace, name):
        obj = self.get_ref(rt, namespace, name)
        return None if obj is None else storage.clone(obj)

    def get(self, rt, namespace, name):
        obj = self.try_get(rt, namespace, name)
        if obj is None:
            raise apistatus.not_found(rt, name)
        return obj

    def get_ref(self, rt, namespace, name):
        """The cached object itself (read-only) or None."""
        return self._informers[rt.key].get(_key(rt, namespace, name))

    def read_live(self, rt, namespace, name):
        """The object as the API server has it now (a GET), or None.

        virt-api reads the VM and VMI a subresource acts on this way: a
        request right after the client's own write must see that write,
        which the watch may not have delivered yet.
        """
        with apistatus.ignoring(404):
            return _decorate(rt, self.request(
                'GET', self.path(rt, namespace, name)))
        return None

    def list(self, rt, namespace=None):
        """``(copies in key order, the cache's resourceVersion)``."""
        items, rv = self._informers[rt.key].items(namespace)
        return [storage.clone(obj) for obj in items], rv

    # -- writes (live) -------------------------------------------------------

    def create(self, rt, obj, *, manager=None):
        """POST; then PUT the status a status subresource dropped."""
        meta = obj.get('metadata') or {}
        namespace = meta.get('namespace') if rt.namespaced else None
        created = self._write('POST', rt, self.path(rt, namespace), obj,
                              manager)
        status = obj.get('status')
        if rt.status_subresource and status and \
                created.get('status') != status:
            created = self._write(
                'PUT', rt, self.path(rt, namespace,
                                     created['metadata']['name'], 'status'),
                dict(created, status=status), manager)
        return created

    def update(self, rt, obj, *, subresource=None, manager=None):
        """PUT ``obj`` (409 on a stale resourceVersion)."""
        meta = obj.get('metadata') or {}
        return self._write('PUT', rt, self._object_path(
            rt, meta.get('namespace'), meta.get('name', ''), subresource),
            obj, manager)

    def mutate(self, rt, namespace, name, fn, *, subresource=None,
               manager=None):
        """GET, ``fn(copy)``, PUT; a 409 Conflict reads and retries.

        At most ``CONFLICT_RETRIES`` times, after a short random pause.
        If ``fn`` sets a different resourceVersion the write fails with
        409 at once, as in the in-process store.
        """
        path = self.path(rt, namespace, name)
        conflict = None
        for attempt in range(CONFLICT_RETRIES):
            if conflict is not None:   # writers in step would clash again
                time.sleep(random.uniform(0, CONFLICT_PAUSE * attempt))
            current = _decorate(rt, self.request('GET', path))
            new = storage.clone(current)
            fn(new)
            rv = _rv(current)
            meta = new.setdefault('metadata', {})
            if meta.get('resourceVersion') and meta['resourceVersion'] != rv:
                raise apistatus.conflict(rt, name)
            meta['resourceVersion'] = rv
            body = _changed(rt, current, new, subresource)
            if body is None:
                return current
            try:
                return self._write('PUT', rt, self._object_path(
                    rt, namespace, name, subresource), body, manager)
            except apistatus.ApiError as exc:
                if exc.code != 409:
                    raise
                conflict = exc
        raise conflict

    def delete(self, rt, namespace, name, *, uid=None, resource_version=None):
        """DELETE with preconditions; returns the server's answer."""
        body = {'apiVersion': 'v1', 'kind': 'DeleteOptions'}
        pre = {k: v for k, v in (('uid', uid),
                                 ('resourceVersion', resource_version)) if v}
        if pre:
            body['preconditions'] = pre
        result = self.request('DELETE', self.path(rt, namespace, name),
                              body=body)
        informer = self._informers.get(rt.key)
        if informer is not None:
            if result.get('kind') == rt.kind and \
                    result['metadata'].get('finalizers'):
                informer.remember(result)  # marked, not gone
            else:
                informer.deleted(_key(rt, namespace, name), _uid(result) or (
                    result.get('details') or {}).get('uid') or uid)
        return result

    def _write(self, method, rt, path, body, manager):
        query = [('fieldManager', manager)] if manager else []
        result = _decorate(rt, self.request(method, path, query, body))
        informer = self._informers.get(rt.key)
        if informer is not None:
            informer.remember(result)
        return storage.clone(result)

    # -- HTTP ----------------------------------------------------------------

    @staticmethod
    def path(rt, namespace=None, name=None, subresource=None):
        """The URL path of a collection, an object or its subresource."""
        parts = ['/api/v1' if not rt.group else
                 '/apis/%s/%s' % (rt.group, rt.version)]
        if namespace and rt.namespaced:
            parts += ['namespaces', namespace]
        parts.append(rt.plural)
        parts += [p for p in (name, subresource) if p]
        return '/'.join(urllib.parse.quote(p, safe='/') for p in parts)

    def _object_path(self, rt, namespace, name, subresource):
        status = subresource == 'status' and rt.status_subresource
        return self.path(rt, namespace, name, 'status' if status else None)

    def _serialize(self, method, path, query=None, body=None):
        return self.api_client.param_serialize(
            method=method, resource_path=path, query_params=query or [],
            header_params={'Accept': 'application/json',
                           'Content-Type': 'application/json'},
            body=body, auth_settings=['BearerToken'])

    def request(self, method, path, query=None, body=None):
        """One API call; the decoded answer, or raise ``ApiError``."""
        api = self.api_client
        try:
            response = api.call_api(
                *self._serialize(method, path, query, body),
                _request_timeout=REQUEST_TIMEOUT)
            response.read()
            result = api.response_deserialize(response, {'2XX': 'bytearray'})
        except client.ApiException as exc:
            raise api_error(exc) from None
        except urllib3.exceptions.HTTPError as exc:
            raise _unavailable(exc) from None
        for warning in response.headers.getlist('Warning'):
            self._warn(method, path, warning)
        return json.loads(result.raw_data) if result.raw_data else {}

    def _warn(self, method, path, warning):
        """Log a server warning: the first time loud, then quietly."""
        level = logging.DEBUG if warning in self._warned else logging.WARNING
        self._warned.add(warning)
        LOG.log(level, 'API server warns on %s %s: %s', method, path,
                warning)

    def stream(self, path, query):
        """A watch request's open urllib3 response (or raise)."""
        try:
            response = self.api_client.call_api(
                *self._serialize('GET', path, query),
                _request_timeout=(CONNECT_TIMEOUT, WATCH_SECONDS + 30))
        except client.ApiException as exc:
            raise api_error(exc) from None
        if response.status != 200:
            response.read()
            error = api_error(client.ApiException(http_resp=response))
            if error.code == 410:
                raise _Expired()
            raise error
        return response.response


def _changed(rt, current, new, subresource):
    """The PUT body of a mutation, or None when it changes nothing."""
    if subresource == 'status':
        if new.get('status') == current.get('status'):
            return None
        if rt.status_subresource:
            return new
        return dict(current, status=new.get('status'))
    if rt.status_subresource:
        same = ({k: v for k, v in new.items() if k != 'status'} ==
                {k: v for k, v in current.items() if k != 'status'})
    else:
        same = new == current
    return None if same else new
