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

"""Routing: URL path -> discovery document or ``Request``; verb -> handler.

``route`` fills a ``Request`` (group, version, resource type, namespace,
name, subresource, verb) from its path; ``handle`` calls the handler for
a non-watch verb (watches are streamed by ``watch``).
"""

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import discovery
from sushy_kubevirt.simulator import encoding
from sushy_kubevirt.simulator import listing
from sushy_kubevirt.simulator import mutations
from sushy_kubevirt.simulator import reviews
from sushy_kubevirt.simulator import storage


class PlainNotFound(Exception):
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
        self.warnings = []  # Warning headers of the answer
        self.duplicates = []  # repeated JSON keys of the body

    @property
    def resource(self):
        if self.plural is None:
            return None
        return self.plural + ('/' + self.subresource
                              if self.subresource else '')

    def flag(self, key):
        return self.query.get(key, '').lower() in ('true', '1')


def is_version(path):
    return path in ('/version', '/version/')


def route(api, req):
    """Fill ``req`` from its path; return a discovery document or None.

    Raises PlainNotFound for unknown paths.
    """
    store, subresources = api.store, api.sim.subresources
    parts = [p for p in req.path.split('/') if p]
    if is_version(req.path):
        return discovery.version()
    if req.path.rstrip('/') == discovery.KUBEVIRT_VERSION_PATH:
        return discovery.kubevirt_version()
    if not parts or parts[0] not in ('api', 'apis'):
        raise PlainNotFound()
    if parts[0] == 'api':
        if len(parts) == 1:
            return discovery.api_versions(api.host, api.port)
        group, version, rest = '', parts[1], parts[2:]
    else:
        if len(parts) == 1:
            return discovery.group_list(store, subresources)
        if len(parts) == 2:
            return _found(discovery.group(store, subresources, parts[1]))
        group, version, rest = parts[1], parts[2], parts[3:]
    if not rest:
        return _found(discovery.resource_list(store, subresources, group,
                                              version))
    req.group, req.version = group, version
    _route_resource(store, subresources, req, rest)
    return None


def _found(doc):
    if doc is None:
        raise PlainNotFound()
    return doc


def _route_resource(store, subresources, req, rest):
    watch_prefix = rest[0] == 'watch'
    if watch_prefix:
        rest = rest[1:]
        req.query['watch'] = 'true'
    gv = '%s/%s' % (req.group, req.version) if req.group else req.version
    if (len(rest) >= 3 and rest[0] == 'namespaces' and
            _known(store, subresources, req.group, req.version, rest[2],
                   gv)):
        req.namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise PlainNotFound()
    req.plural = rest[0]
    req.name = rest[1] if len(rest) > 1 else None
    req.subresource = rest[2] if len(rest) > 2 else None
    action = subresources.get((gv, req.plural, req.subresource))
    if action is not None and req.name:
        req.action = action
        req.rt = _rt_any_group(store, req.plural)
        req.verb = 'update' if req.method in ('PUT', 'POST') else \
            req.method.lower()
        if req.namespace is None:
            raise PlainNotFound()
        return
    try:
        rt = store.resource(req.group, req.plural)
    except KeyError:
        raise PlainNotFound()
    if rt.version != req.version or \
            (req.namespace is not None and not rt.namespaced):
        raise PlainNotFound()
    if req.subresource and (req.subresource != 'status' or
                            not rt.status_subresource):
        raise PlainNotFound()
    req.rt = rt
    if reviews.is_review(rt) and (req.method, req.name) != ('POST', None):
        raise reviews.not_served(req)
    req.verb = _verb(req, watch_prefix)


def _known(store, subresources, group, version, plural, gv):
    """``plural`` is a namespaced resource (or action) of ``gv``."""
    try:
        rt = store.resource(group, plural)
    except KeyError:
        return any(key[0] == gv and key[1] == plural
                   for key in subresources)
    return rt.namespaced and rt.version == version


def _rt_any_group(store, plural):
    for rt in store.resources():
        if rt.plural == plural:
            return rt
    return storage.ResourceType('', 'v1', plural, '')


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
    raise apistatus.method_not_supported(req.rt or storage.ResourceType(
        req.group, req.version, req.plural, ''), method)


def check_accept(action, accept):
    """406 for an Accept an untyped action cannot meet, as go-restful."""
    if not getattr(action, 'untyped', False) or not accept:
        return
    if '*/*' not in [part.split(';')[0].strip()
                     for part in accept.split(',')]:
        raise apistatus.ApiError(406, 'NotAcceptable',
                                 '406: Not Acceptable')


def handle(api, req, body, headers):
    """Return ``(code, document)`` for a non-watch request."""
    if req.action is not None:
        check_accept(req.action, headers.get('Accept'))
        result = req.action(req.namespace, req.name,
                            encoding.json_body(body) if body else None,
                            req.user)
        if isinstance(result, tuple):
            return result
        return 200, result
    if req.verb == 'get':
        return 200, api.store.get(req.rt, req.namespace, req.name)
    if req.verb == 'list':
        return 200, listing.list_objects(api, req)
    if req.verb == 'create':
        obj = encoding.json_body(body, req.duplicates)
        return 201, mutations.create(api, req, obj, headers)
    if req.verb == 'update':
        obj = encoding.json_body(body, req.duplicates)
        return 200, mutations.update(api, req, obj, headers)
    if req.verb == 'patch':
        return mutations.patch(api, req, body, headers)
    if req.verb == 'delete':
        return 200, mutations.delete(api, req, body)
    if req.verb == 'deletecollection':
        return 200, mutations.delete_collection(api, req)
    raise apistatus.method_not_supported(req.rt, req.method)
