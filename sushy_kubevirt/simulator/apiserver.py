"""HTTP front end: discovery, list/watch/CRUD/patch, errors, faults.

Filter order follows kube-apiserver: authentication (401), then
priority and fairness (429), then authorization (403), then the handler.
Fault rules (latency, forced status) run inside the APF window, so a
delayed request counts as in flight.
"""

import base64
import http.server
import io
import json
import logging
import random
import socket
import threading
import time
import urllib.parse

from sushy_kubevirt.simulator import patch as patching
from sushy_kubevirt.simulator import selectors
from sushy_kubevirt.simulator import status as st
from sushy_kubevirt.simulator import store as storemod

LOG = logging.getLogger(__name__)

VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch',
         'update', 'watch']
SUB_VERBS = ['get', 'patch', 'update']
INITIAL_EVENTS_END = 'k8s.io/initial-events-end'
NOT_FOUND_TEXT = '404 page not found\n'


class _PlainNotFound(Exception):
    """Unknown path: plain-text 404 like kube's final handler."""


class Request:
    """A parsed API request (what the authorizer and log see)."""

    def __init__(self, method, path, query):
        self.method = method
        self.path = path
        self.query = query
        self.verb = None
        self.group = ''
        self.version = ''
        self.rt = None
        self.plural = None
        self.namespace = None
        self.name = None
        self.subresource = None
        self.action = None  # registered subresource handler
        self.user = None

    @property
    def resource(self):
        if self.plural is None:
            return None
        return self.plural + ('/' + self.subresource
                              if self.subresource else '')

    def flag(self, key):
        return self.query.get(key, '').lower() in ('true', '1')


class ApiServer:
    """Serves one simulator's store over HTTP/1.1."""

    def __init__(self, sim, host='127.0.0.1', port=0):
        self.sim = sim
        self.store = sim.store
        self.host = host
        self.port = port
        self._httpd = None
        self._thread = None
        self._lock = threading.Lock()
        self._connections = set()
        self._json_cache = {}
        self._random = random.Random(sim.seed)  # default watch timeouts

    # -- lifecycle --------------------------------------------------------

    def start(self):
        handler = type('Handler', (_Handler,), {'api': self})
        server = http.server.ThreadingHTTPServer
        server.allow_reuse_address = True
        self._httpd = server((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={'poll_interval': 0.1},
            name='sim-apiserver', daemon=True)
        self._thread.start()
        return self.port

    def stop(self):
        """Stop listening and cut every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            _shutdown(conn)  # abrupt, like a crashed server
        self.store.close_watchers()

    @property
    def running(self):
        return self._httpd is not None

    def track(self, conn, add):
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    # -- serialisation ------------------------------------------------------

    def dumps(self, obj):
        """JSON text of a stored (immutable) object, cached per object."""
        meta = obj['metadata']
        key = (obj.get('kind'), meta.get('namespace'), meta['name'])
        cached = self._json_cache.get(key)
        if cached is not None and cached[0] is obj:
            return cached[1]
        text = json.dumps(obj, separators=(',', ':'))
        self._json_cache[key] = (obj, text)
        return text

    # -- routing --------------------------------------------------------------

    def route(self, req):
        """Fill ``req`` from its path; return a discovery document or None.

        Raises _PlainNotFound for unknown paths.
        """
        parts = [p for p in req.path.split('/') if p]
        if req.path in ('/version', '/version/'):
            return self.version()
        if not parts or parts[0] not in ('api', 'apis'):
            raise _PlainNotFound()
        if parts[0] == 'api':
            if len(parts) == 1:
                return {'kind': 'APIVersions', 'versions': ['v1'],
                        'serverAddressByClientCIDRs': [{
                            'clientCIDR': '0.0.0.0/0',
                            'serverAddress': '%s:%d' % (self.host,
                                                        self.port)}]}
            group, version, rest = '', parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return self.group_list()
            if len(parts) == 2:
                return self.group(parts[1])
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            return self.resource_list(group, version)
        req.group, req.version = group, version
        self._route_resource(req, rest)
        return None

    def _route_resource(self, req, rest):
        watch_prefix = rest[0] == 'watch'
        if watch_prefix:
            rest = rest[1:]
            req.query['watch'] = 'true'
        gv = '%s/%s' % (req.group, req.version) if req.group \
            else req.version
        if (len(rest) >= 3 and rest[0] == 'namespaces' and
                self._known(req.group, req.version, rest[2], gv)):
            req.namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise _PlainNotFound()
        req.plural = rest[0]
        req.name = rest[1] if len(rest) > 1 else None
        req.subresource = rest[2] if len(rest) > 2 else None
        action = self.sim.subresources.get((gv, req.plural,
                                            req.subresource))
        if action is not None and req.name:
            req.action = action
            req.rt = self._rt_any_group(req.plural)
            req.verb = 'update' if req.method in ('PUT', 'POST') else \
                req.method.lower()
            if req.namespace is None:
                raise _PlainNotFound()
            return
        try:
            rt = self.store.resource(req.group, req.plural)
        except KeyError:
            raise _PlainNotFound()
        if rt.version != req.version or \
                (req.namespace is not None and not rt.namespaced):
            raise _PlainNotFound()
        if req.subresource and (req.subresource != 'status' or
                                not rt.status_subresource):
            raise _PlainNotFound()
        req.rt = rt
        req.verb = self._verb(req, watch_prefix)

    def _known(self, group, version, plural, gv):
        try:
            rt = self.store.resource(group, plural)
        except KeyError:
            return any(key[0] == gv and key[1] == plural
                       for key in self.sim.subresources)
        return rt.namespaced and rt.version == version

    def _rt_any_group(self, plural):
        for rt in self.store.resources():
            if rt.plural == plural:
                return rt
        return storemod.ResourceType('', 'v1', plural, '')

    @staticmethod
    def _verb(req, watch_prefix):
        method = req.method
        if method == 'GET':
            if req.name:
                return 'watch' if watch_prefix else 'get'
            return 'watch' if req.flag('watch') else 'list'
        if method == 'POST' and not req.name:
            return 'create'
        if method == 'PUT' and req.name:
            return 'update'
        if method == 'PATCH' and req.name:
            return 'patch'
        if method == 'DELETE':
            return 'delete' if req.name else 'deletecollection'
        raise st.method_not_supported(req.rt or storemod.ResourceType(
            req.group, req.version, req.plural, ''), method)

    # -- discovery --------------------------------------------------------

    def version(self):
        return {'major': '1', 'minor': '34', 'emulationMajor': '1',
                'emulationMinor': '34', 'gitVersion': 'v1.34.0-sushy-sim',
                'gitCommit': '0000000000000000000000000000000000000000',
                'gitTreeState': 'clean', 'buildDate': '2026-01-01T00:00:00Z',
                'goVersion': 'go1.24.0', 'compiler': 'gc',
                'platform': 'linux/amd64'}

    def _group_versions(self):
        groups = {}
        for rt in self.store.resources():
            if rt.group:
                groups.setdefault(rt.group, set()).add(rt.version)
        for gv, _plural, _action in self.sim.subresources:
            group, _, version = gv.partition('/')
            groups.setdefault(group, set()).add(version)
        return groups

    def _group_doc(self, group, versions):
        entries = [{'groupVersion': '%s/%s' % (group, v), 'version': v}
                   for v in sorted(versions)]
        return {'name': group, 'versions': entries,
                'preferredVersion': entries[0]}

    def group_list(self):
        return {'kind': 'APIGroupList', 'apiVersion': 'v1',
                'groups': [self._group_doc(g, v) for g, v in
                           sorted(self._group_versions().items())]}

    def group(self, name):
        versions = self._group_versions().get(name)
        if not versions:
            raise _PlainNotFound()
        return dict(self._group_doc(name, versions), kind='APIGroup',
                    apiVersion='v1')

    def resource_list(self, group, version):
        gv = '%s/%s' % (group, version) if group else version
        resources = []
        for rt in sorted(self.store.resources(), key=lambda r: r.plural):
            if rt.group != group or rt.version != version:
                continue
            entry = {'name': rt.plural, 'singularName': rt.singular,
                     'namespaced': rt.namespaced, 'kind': rt.kind,
                     'verbs': VERBS}
            if rt.short_names:
                entry['shortNames'] = list(rt.short_names)
            resources.append(entry)
            if rt.status_subresource:
                resources.append({'name': rt.plural + '/status',
                                  'singularName': '',
                                  'namespaced': rt.namespaced,
                                  'kind': rt.kind, 'verbs': SUB_VERBS})
        for key_gv, plural, action in sorted(self.sim.subresources):
            if key_gv == gv:
                resources.append({'name': '%s/%s' % (plural, action),
                                  'singularName': '', 'namespaced': True,
                                  'kind': '', 'verbs': ['update']})
        if not resources:
            raise _PlainNotFound()
        return {'kind': 'APIResourceList', 'apiVersion': 'v1',
                'groupVersion': gv, 'resources': resources}

    # -- handlers ---------------------------------------------------------

    def handle(self, req, body, headers):
        """Return ``(code, document)`` for a non-watch request."""
        rt = req.rt
        if req.action is not None:
            result = req.action(req.namespace, req.name,
                                _json_body(body) if body else None,
                                req.user)
            if isinstance(result, tuple):
                return result
            return 200, result
        if req.verb == 'get':
            return 200, self.store.get(rt, req.namespace, req.name)
        if req.verb == 'list':
            return 200, self.list(req)
        if req.verb == 'create':
            return 201, self.create(req, _json_body(body), headers)
        if req.verb == 'update':
            return 200, self.update(req, _json_body(body), headers)
        if req.verb == 'patch':
            return self.patch(req, body, headers)
        if req.verb == 'delete':
            return 200, self.delete(req, body)
        if req.verb == 'deletecollection':
            return 200, self.delete_collection(req)
        raise st.method_not_supported(rt, req.method)

    def _manager(self, req, headers):
        manager = req.query.get('fieldManager')
        if manager:
            return manager
        agent = headers.get('User-Agent') or 'unknown'
        return agent.split('/')[0]

    def _admit(self, req, operation, new, old):
        if req.rt.key == '/secrets' and 'stringData' in new:
            data = new.setdefault('data', {})
            for key, value in (new.pop('stringData') or {}).items():
                data[key] = base64.b64encode(value.encode()).decode()
        for fn in self.sim.admission.get(req.rt.key, ()):
            fn(operation, new, old, req.user)

    def _check_namespace(self, req):
        if not req.rt.namespaced:
            return
        try:
            ns_rt = self.store.resource('', 'namespaces')
        except KeyError:
            return
        if self.store.get_ref(ns_rt, None, req.namespace) is None:
            raise st.not_found(ns_rt, req.namespace)

    def create(self, req, obj, headers):
        rt = req.rt
        _check_kind(rt, obj)
        meta = obj.setdefault('metadata', {})
        if rt.namespaced:
            if meta.get('namespace') and meta['namespace'] != req.namespace:
                raise st.bad_request(
                    'the namespace of the provided object does not match '
                    'the namespace sent on the request')
            meta['namespace'] = req.namespace
        if req.namespace is None and rt.namespaced:
            raise st.method_not_supported(rt, 'create')
        self._check_namespace(req)
        if rt.status_subresource:
            obj.pop('status', None)
        for field in ('uid', 'resourceVersion', 'creationTimestamp',
                      'deletionTimestamp', 'generation', 'managedFields'):
            meta.pop(field, None)
        obj['apiVersion'], obj['kind'] = rt.api_version, rt.kind
        self._admit(req, 'CREATE', obj, None)
        return self.store.create(rt, obj,
                                 manager=self._manager(req, headers))

    def update(self, req, obj, headers):
        rt = req.rt
        _check_kind(rt, obj)
        meta = obj.setdefault('metadata', {})
        if meta.get('name') != req.name:
            raise st.bad_request(
                'the name of the object (%s) does not match the name on '
                'the URL (%s)' % (meta.get('name'), req.name))
        if rt.namespaced:
            if meta.get('namespace', req.namespace) != req.namespace:
                raise st.bad_request(
                    'the namespace of the provided object does not match '
                    'the namespace sent on the request')
            meta['namespace'] = req.namespace
        if not meta.get('resourceVersion'):
            raise st.invalid(rt, req.name, [st.invalid_value(
                'metadata.resourceVersion', '0x0',
                'must be specified for an update')])

        def replace(current):
            if meta['resourceVersion'] != \
                    current['metadata']['resourceVersion']:
                raise st.conflict(rt, req.name)
            old = storemod.clone(current)
            current.clear()
            current.update(obj)
            if req.subresource is None:
                self._admit(req, 'UPDATE', current, old)
        return self.store.mutate(rt, req.namespace, req.name, replace,
                                 subresource=req.subresource,
                                 manager=self._manager(req, headers))

    def patch(self, req, body, headers):
        rt = req.rt
        ctype = headers.get('Content-Type', '')
        manager = req.query.get('fieldManager')
        media = ctype.split(';')[0].strip()
        if media not in patching.ACCEPTED:
            raise st.unsupported_media_type(patching.ACCEPTED)
        if media == patching.APPLY_PATCH and not manager:
            patching.apply_patch({}, body, manager)

        def apply(current):
            old = storemod.clone(current)
            new = patching.apply(ctype, current, body, manager)
            if not isinstance(new, dict):
                raise st.bad_request('patched object is not an object')
            meta = new.setdefault('metadata', {})
            if meta.get('name') != req.name:
                meta['name'] = req.name
            current.clear()
            current.update(new)
            if req.subresource is None:
                self._admit(req, 'UPDATE', current, old)
        try:
            return 200, self.store.mutate(
                rt, req.namespace, req.name, apply,
                subresource=req.subresource,
                manager=manager or self._manager(req, headers))
        except st.ApiError as exc:
            if exc.code != 404 or media != patching.APPLY_PATCH or \
                    req.subresource or exc.details.get('name') != req.name:
                raise
        obj = patching.apply_patch({}, body, manager)
        obj.setdefault('metadata', {})['name'] = req.name
        return 201, self.create(req, obj, headers)

    def delete(self, req, body):
        options = _json_body(body) if body else {}
        pre = options.get('preconditions') or {}
        obj = self.store.delete(req.rt, req.namespace, req.name,
                                uid=pre.get('uid'),
                                resource_version=pre.get('resourceVersion'))
        if obj['metadata'].get('finalizers'):
            return obj
        return _success(req.rt, obj)

    def delete_collection(self, req):
        match = selectors.matcher(req.query.get('labelSelector'),
                                  req.query.get('fieldSelector'), req.rt)
        items, _rv = self.store.snapshot(req.rt, req.namespace)
        for obj in items:
            if match is None or match(obj):
                try:
                    self.store.delete(req.rt, obj['metadata'].get(
                        'namespace'), obj['metadata']['name'])
                except st.ApiError as exc:
                    if exc.code != 404:
                        raise
        return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                'status': 'Success'}

    # -- list ---------------------------------------------------------------

    def list(self, req):
        """Return the list body as JSON text (items serialised once)."""
        q = req.query
        rt = req.rt
        errors = _validate_list(q)
        if errors:
            raise st.invalid('ListOptions', '', errors,
                             group='meta.k8s.io')
        match = selectors.matcher(q.get('labelSelector'),
                                  q.get('fieldSelector'), rt)
        rv = q.get('resourceVersion', '')
        rv_match = q.get('resourceVersionMatch', '')
        limit = _int_param(q, 'limit')
        token = q.get('continue')
        start = None
        if token:
            at_rv, start = _decode_continue(token)
            if at_rv < self.store.compacted_resource_version:
                raise st.ApiError(
                    410, 'Expired', INCONSISTENT_CONTINUE,
                    metadata={'continue': _encode_continue(
                        self.store.resource_version, start)})
            items, list_rv = self.store.snapshot(rt, req.namespace, at_rv)
        elif rv_match == 'Exact' or (rv not in ('', '0') and limit and
                                     not rv_match):
            items, list_rv = self.store.snapshot(
                rt, req.namespace, _parse_rv(rv))
        else:
            if rv not in ('', '0'):
                wanted = _parse_rv(rv)
                if not self.store.wait_for_rv(wanted,
                                              self.sim.too_large_wait):
                    raise st.too_large_resource_version(
                        wanted, self.store.resource_version)
            items, list_rv = self.store.snapshot(rt, req.namespace)
            if rv == '0':
                limit = 0
        if start is not None:
            items = _after(items, start)
        if match is not None:
            items = [o for o in items if match(o)]
        meta = {'resourceVersion': str(list_rv)}
        if limit and len(items) > limit:
            last = items[limit - 1]['metadata']
            meta['continue'] = _encode_continue(
                list_rv, (last.get('namespace') or '', last['name']))
            if match is None:
                meta['remainingItemCount'] = len(items) - limit
            items = items[:limit]
        head = json.dumps({'apiVersion': rt.api_version,
                           'kind': rt.kind + 'List', 'metadata': meta},
                          separators=(',', ':'))
        return ''.join((head[:-1], ',"items":[',
                        ','.join(self.dumps(o) for o in items), ']}'))

    # -- watch --------------------------------------------------------------

    def open_watch(self, req):
        """Validate a watch request and register its watcher."""
        q = req.query
        errors = _validate_watch(q, self.sim.watchlist_enabled)
        if errors:
            raise st.invalid('ListOptions', '', errors,
                             group='meta.k8s.io')
        match = selectors.matcher(q.get('labelSelector'),
                                  q.get('fieldSelector'), req.rt)
        if req.name:
            by_name = selectors.parse_fields('metadata.name=' + req.name,
                                             req.rt)
            match = by_name if match is None else (
                lambda o, m=match: m(o) and by_name(o))
        rv = q.get('resourceVersion', '')
        send_initial = q.get('sendInitialEvents', '').lower()
        if not send_initial and not q.get('resourceVersionMatch') and \
                rv in ('', '0') and self.sim.watchlist_enabled:
            send_initial = 'true'
        initial = send_initial == 'true'
        if rv not in ('', '0'):
            _parse_rv(rv)
        watcher = self.store.watch(req.rt, req.namespace,
                                   None if initial else rv,
                                   too_large_wait=self.sim.too_large_wait)
        return watcher, match, initial and req.flag('allowWatchBookmarks')

    def watch_deadline(self, req):
        timeout = req.query.get('timeoutSeconds')
        if timeout:
            return float(_int_param(req.query, 'timeoutSeconds'))
        return self.sim.min_request_timeout * (1 + self._random.random())


INCONSISTENT_CONTINUE = (
    'The provided continue parameter is too old to display a consistent '
    'list result. You can start a new list without the continue '
    'parameter, or use the continue token in this response to retrieve '
    'the remainder of the results. Continuing with the provided token '
    'results in an inconsistent list - objects that were created, '
    'modified, or deleted between the time the first chunk was returned '
    'and now may show up in the list.')


def _success(rt, obj):
    details = {'name': obj['metadata']['name'], 'group': rt.group,
               'kind': rt.plural, 'uid': obj['metadata'].get('uid')}
    return {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
            'status': 'Success',
            'details': {k: v for k, v in details.items() if v}}


def _json_body(body):
    try:
        obj = json.loads(body or b'{}')
    except ValueError as exc:
        raise st.bad_request('the object provided is unrecognized or '
                             'malformed: %s' % exc)
    if not isinstance(obj, dict):
        raise st.bad_request('the object provided is unrecognized or '
                             'malformed')
    return obj


def _check_kind(rt, obj):
    kind, api_version = obj.get('kind'), obj.get('apiVersion')
    if (kind and kind != rt.kind) or (api_version and
                                      api_version != rt.api_version):
        raise st.bad_request(
            'the API version in the data (%s) does not match the expected '
            'API version (%s)' % (api_version, rt.api_version)
            if api_version != rt.api_version else
            '%s in version "%s" cannot be handled as a %s: the kind does '
            'not match' % (kind, rt.version, rt.kind))


def _int_param(query, key):
    value = query.get(key)
    if value in (None, ''):
        return 0
    try:
        number = int(value)
    except ValueError:
        raise st.bad_request('invalid value for %s: %r' % (key, value))
    if number < 0:
        raise st.bad_request('%s must not be negative' % key)
    return number


def _parse_rv(value):
    try:
        rv = int(value)
    except ValueError:
        rv = -1
    if rv < 0:
        raise st.bad_request('invalid resource version "%s"' % value)
    return rv


def _encode_continue(rv, key):
    doc = {'v': 'meta.k8s.io/v1', 'rv': rv,
           'start': '%s/%s\x00' % key}
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode()


def _decode_continue(token):
    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = doc['start'].rstrip('\x00').partition('/')
        return int(doc['rv']), (namespace, name)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise st.bad_request('invalid continue token: continue key is not '
                             'valid: incorrect encoded start '
                             'resourceVersion (version meta.k8s.io/v1)')


def _after(items, start):
    return [o for o in items
            if (o['metadata'].get('namespace') or '',
                o['metadata']['name']) > start]


def _validate_list(q):
    errors = []
    match = q.get('resourceVersionMatch', '')
    if match:
        if not q.get('resourceVersion'):
            errors.append(st.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch is forbidden '
                'unless resourceVersion is provided'))
        if q.get('continue'):
            errors.append(st.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch is forbidden '
                'when continue is provided'))
        if match not in ('Exact', 'NotOlderThan'):
            errors.append(st.not_supported('resourceVersionMatch', match,
                                           ['Exact', 'NotOlderThan', '']))
        if match == 'Exact' and q.get('resourceVersion') == '0':
            errors.append(st.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch "exact" is '
                'forbidden for resourceVersion "0"'))
    if 'sendInitialEvents' in q:
        errors.append(st.forbidden_field(
            'sendInitialEvents', 'sendInitialEvents is forbidden for list'))
    return errors


def _validate_watch(q, watchlist_enabled):
    errors = []
    match = q.get('resourceVersionMatch', '')
    if 'sendInitialEvents' in q:
        if match != 'NotOlderThan':
            errors.append(st.forbidden_field(
                'resourceVersionMatch', 'sendInitialEvents requires setting '
                'resourceVersionMatch to NotOlderThan'))
        if not watchlist_enabled:
            errors.append(st.forbidden_field(
                'sendInitialEvents', 'sendInitialEvents is forbidden for '
                'watch unless the WatchList feature gate is enabled'))
    if match:
        if 'sendInitialEvents' not in q:
            errors.append(st.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch is forbidden '
                'for watch unless sendInitialEvents is provided'))
        if match != 'NotOlderThan':
            errors.append(st.not_supported('resourceVersionMatch', match,
                                           ['NotOlderThan']))
        if q.get('continue'):
            errors.append(st.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch is forbidden '
                'when continue is provided'))
    return errors


def _shutdown(conn):
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'sushy-kubevirt-sim'
    sys_version = ''
    wbufsize = io.DEFAULT_BUFFER_SIZE  # buffered: one write per flush
    api = None  # set by ApiServer.start

    def setup(self):
        super().setup()
        # No Nagle: a small write must not wait for the peer's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.api.track(self.connection, True)

    def handle(self):
        try:
            super().handle()
        except ConnectionError as exc:  # the client went away: normal
            LOG.debug('%s disconnected: %s', self.address_string(), exc)

    def finish(self):
        try:
            for stream in (self.wfile, self.rfile):
                try:
                    stream.close()  # flushes the write buffer first
                except OSError:
                    pass
        finally:
            self.api.track(self.connection, False)

    def log_message(self, fmt, *args):
        LOG.debug('%s ' + fmt, self.address_string(), *args)

    def do_GET(self):
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    # -- plumbing -----------------------------------------------------------

    def _read_body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(length) if length else b''

    def _record(self, code):
        """Put the request in the log (once) before its last bytes go out.

        A client that has read a response, or a watch's last event, always
        finds the entry: a non-watch is logged before its response is
        written, a watch before its final line and terminating chunk.
        """
        entry, req = self._entry, self._req
        if entry['status'] is not None:
            return
        entry.update(status=code, verb=req.verb, group=req.group or '',
                     resource=req.resource, namespace=req.namespace,
                     name=req.name, user=req.user,
                     duration=time.monotonic() - self._started)
        self.api.sim.request_log.record(entry)

    def _send(self, code, data, content_type='application/json',
              headers=None):
        if isinstance(data, str):
            data = data.encode()
        self._record(code)
        self.send_response(code)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.send_header('Cache-Control', 'no-cache, private')
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        # Headers and body leave in one write (end_headers would send the
        # headers on their own).
        self._headers_buffer.append(b'\r\n%s' % data)
        self.flush_headers()
        self.wfile.flush()

    def _send_error(self, error):
        data, ctype = error.body()
        self._send(error.code, data, ctype, error.headers)

    def _serve(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in
                 urllib.parse.parse_qs(url.query,
                                       keep_blank_values=True).items()}
        req = self._req = Request(self.command, url.path, query)
        self._entry = {'method': self.command, 'path': url.path,
                       'query': dict(query), 'verb': None, 'group': None,
                       'resource': None, 'namespace': None, 'name': None,
                       'status': None, 'started': time.time(),
                       'duration': None, 'events': 0, 'user': None}
        self._started = time.monotonic()
        self._begun = False  # a watch stream has started
        try:
            self._dispatch(req, self._read_body())
        except OSError as exc:
            LOG.debug('connection lost: %s', exc)
            self.close_connection = True
        finally:
            # No-op when logged already; 499: gone before any response.
            self._record(200 if self._begun else 499)

    def _dispatch(self, req, body):
        api = self.api
        faults = api.sim.faults
        try:
            try:
                discovery, missing = api.route(req), False
                if discovery is not None:
                    req.verb = 'get'
            except _PlainNotFound:
                discovery, missing = None, True
            if req.path not in ('/version', '/version/'):
                req.user = api.sim.authz.authenticate(
                    self.headers.get('Authorization'))
            if missing:
                raise _PlainNotFound()
            release = faults.admit(req.verb == 'watch')
            try:
                faults.before(req.method, req.path, req.query)
                if discovery is not None:
                    self._send(200, json.dumps(discovery))
                    return
                if not api.sim.authz.authorized(
                        req.user, req.verb, req.namespace, req.resource,
                        req.group):
                    raise st.forbidden(req.user, req.verb, req.rt,
                                       req.namespace, req.name or '',
                                       req.subresource or '')
                if req.verb == 'watch':
                    self._watch(req)
                    return
                code, doc = api.handle(req, body, self.headers)
            finally:
                release()
        except _PlainNotFound:
            self._send(404, NOT_FOUND_TEXT, 'text/plain; charset=utf-8')
            return
        except st.ApiError as exc:
            if not self._begun:
                self._send_error(exc)
            else:  # a watch already answered 200: just cut it
                LOG.warning('watch failed after it started: %s', exc)
                self.close_connection = True
            return
        except OSError:
            raise
        except Exception as exc:  # noqa: broad: answer 500 like kube
            LOG.exception('simulator handler failed')
            if self._begun:
                self.close_connection = True  # mid-stream: just cut it
                return
            self._send_error(st.internal(str(exc)))
            return
        if doc is None:
            self._send(code, b'')
        elif isinstance(doc, str):
            self._send(code, doc)
        else:
            self._send(code, json.dumps(doc, separators=(',', ':')))

    # -- watch stream ---------------------------------------------------------

    def _chunk(self, data):
        self.wfile.write(_chunked(data))
        self.wfile.flush()

    def _end(self, sent, last=None, terminate=True):
        """Log the watch, then send its last line and the terminator."""
        self._entry['events'] = sent
        self._record(200)
        data = b'' if last is None else _chunked(last)
        self.wfile.write(data + (b'0\r\n\r\n' if terminate else b''))
        self.wfile.flush()

    def _watch(self, req):
        api = self.api
        watcher, match, end_bookmark = api.open_watch(req)
        timeout = api.watch_deadline(req)
        plan = api.sim.faults.stream_plan(req.method, req.path, req.query)
        try:
            self._begun = True
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Transfer-Encoding', 'chunked')
            self.send_header('Cache-Control', 'no-cache, private')
            self.end_headers()
            self.wfile.flush()
            self._stream(req, watcher, match, end_bookmark, timeout, plan)
        finally:
            watcher.close()

    def _stream(self, req, watcher, match, end_bookmark, timeout, plan):
        api = self.api
        sim = api.sim
        rt = req.rt
        now = time.monotonic()
        deadline = now + timeout
        bookmarks = req.flag('allowWatchBookmarks')
        interval = sim.bookmark_interval
        next_bookmark = now + interval
        final_bookmark = deadline - min(2.0, interval)
        initial = len(watcher.queue) if end_bookmark else None
        initial_rv = watcher.min_rv
        sent = 0
        last = None
        if 'stall' in plan:
            self._stall(plan['stall'].get('seconds'), deadline)
            return
        event_delay = plan.get('event_delay', {}).get('seconds', 0)
        while True:
            if self._fault_due(plan, sent, rt):
                return
            if initial == 0:
                initial = None
                self._chunk(self._bookmark(rt, initial_rv, end=True))
                sent += 1
                continue
            now = time.monotonic()
            if now >= deadline:
                break
            wake = deadline
            if bookmarks:
                wake = min(wake, next_bookmark)
                if final_bookmark > now:
                    wake = min(wake, final_bookmark)
            event = watcher.next(max(0.0, wake - now))
            if event is None:
                if watcher.closed:
                    break
                now = time.monotonic()
                if bookmarks and (now >= next_bookmark or
                                  final_bookmark <= now < deadline):
                    if final_bookmark <= now:
                        final_bookmark = float('inf')
                    next_bookmark = now + interval
                    rv = self._bookmark_rv(watcher)
                    if rv is not None:
                        self._chunk(self._bookmark(rt, rv))
                        sent += 1
                continue
            if isinstance(event, dict):
                last = json.dumps({'type': 'ERROR', 'object': event}
                                  ).encode() + b'\n'
                sent += 1
                break
            if initial is not None:
                initial -= 1
            line = self._line(event, match)
            if line is None:
                continue
            if event_delay:
                time.sleep(event_delay)
            self._chunk(line)
            sent += 1
            self._entry['events'] = sent
        self._end(sent, last)

    def _fault_due(self, plan, sent, rt):
        """Apply stream faults due after ``sent`` events; True = stop."""
        error = plan.get('watch_error')
        if error is not None and sent >= error['after']:
            code = error['code']
            status = st.from_code(code, error.get('message')).to_status()
            if code == 410 and not error.get('message'):
                status['message'] = 'too old resource version: injected'
            self._end(sent, json.dumps({'type': 'ERROR', 'object': status})
                      .encode() + b'\n')
            return True
        drop = plan.get('drop')
        if drop is not None and sent >= drop['after']:
            self._entry['events'] = sent
            self._record(200)
            if drop.get('partial', True):
                line = b'{"type":"MODIFIED","object":{"kind":"%s"' % (
                    rt.kind.encode())
                self.wfile.write(b'%x\r\n%s' % (len(line) + 40, line))
                self.wfile.flush()
            _shutdown(self.connection)
            self.close_connection = True
            return True
        close = plan.get('close')
        if close is not None and sent >= close['after']:
            self._end(sent)
            return True
        return False

    def _stall(self, seconds, deadline):
        end = time.monotonic() + seconds if seconds is not None else deadline
        with self.api.store.condition:
            while self.api.running and time.monotonic() < end:
                self.api.store.condition.wait(min(0.5, max(
                    0.0, end - time.monotonic())))
        self.close_connection = True
        self._record(200)
        _shutdown(self.connection)

    def _bookmark_rv(self, watcher):
        with self.api.store.condition:
            if watcher.queue:
                return None
            return max(self.api.store.resource_version, watcher.min_rv)

    @staticmethod
    def _bookmark(rt, rv, end=False):
        meta = {'resourceVersion': str(rv)}
        if end:
            meta['annotations'] = {INITIAL_EVENTS_END: 'true'}
        return json.dumps({'type': 'BOOKMARK', 'object': {
            'kind': rt.kind, 'apiVersion': rt.api_version,
            'metadata': meta}}, separators=(',', ':')).encode() + b'\n'

    def _line(self, event, match):
        """The NDJSON line for ``event`` after selector transitions."""
        etype = event.type
        obj = event.obj
        if match is not None:
            passes = match(obj)
            if etype == 'MODIFIED':
                was = match(event.old)
                if passes and not was:
                    etype = 'ADDED'
                elif was and not passes:
                    etype = 'DELETED'
                    obj = dict(event.old, metadata=dict(
                        event.old['metadata'],
                        resourceVersion=str(event.rv)))
                    return _event_line(etype, obj)
                elif not passes:
                    return None
            elif not passes:
                return None
        line = event.cache.get(etype)
        if line is None:
            line = _event_line(etype, obj, self.api.dumps(obj)
                               if etype != 'DELETED' else None)
            event.cache[etype] = line
        return line


def _chunked(data):
    return b'%x\r\n%s\r\n' % (len(data), data)


def _event_line(etype, obj, text=None):
    if text is None:
        text = json.dumps(obj, separators=(',', ':'))
    return ('{"type":"%s","object":%s}\n' % (etype, text)).encode()
