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

"""Writes: create, update, patch, delete and deletecollection.

Each validates the request like kube-apiserver, runs mutating admission
(built-in types' strategies, ``builtins`` and ``namespaces``, then
``sim.admission`` functions) on main-resource writes, and commits through
the store, which prunes and validates types that have a schema, then runs
the validating ``sim.validation`` hooks. ``fieldValidation`` decides what
pruned unknown fields and repeated keys do: ``Strict`` rejects the write
(400 for create and update, 422 ``patch: Invalid value`` for JSON and
merge patches), ``Warn`` (the default since Kubernetes 1.27) answers with
``Warning`` headers, ``Ignore`` prunes silently. Apply patches go through
``fieldmanager``. A create of a review type is answered by ``reviews``.
"""

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import builtins
from sushy_kubevirt.simulator import encoding
from sushy_kubevirt.simulator import fieldmanager
from sushy_kubevirt.simulator import garbagecollector
from sushy_kubevirt.simulator import namespaces
from sushy_kubevirt.simulator import patches
from sushy_kubevirt.simulator import reviews
from sushy_kubevirt.simulator import schemas
from sushy_kubevirt.simulator import selectors
from sushy_kubevirt.simulator import storage

OPTIONS = {'create': 'CreateOptions', 'update': 'UpdateOptions',
           'patch': 'PatchOptions'}


def create(api, req, obj, headers, operation='Update'):
    rt = req.rt
    _check_kind(rt, obj)
    if reviews.is_review(rt):  # answered, never stored
        return reviews.create(api.sim, rt, obj, _manager(req, headers))
    meta = obj.setdefault('metadata', {})
    if rt.namespaced:
        if meta.get('namespace') and meta['namespace'] != req.namespace:
            raise _namespace_mismatch()
        meta['namespace'] = req.namespace
    if req.namespace is None and rt.namespaced:
        raise apistatus.method_not_supported(rt, 'create')
    _check_namespace(api.store, req, meta.get('name') or '')
    if rt.status_subresource:
        obj.pop('status', None)
    for field in ('uid', 'resourceVersion', 'creationTimestamp',
                  'deletionTimestamp', 'generation', 'managedFields'):
        if field != 'managedFields' or operation != 'Apply':
            meta.pop(field, None)
    obj['apiVersion'], obj['kind'] = rt.api_version, rt.kind
    unknown = _unknown_fields(req, 'create', api.sim.field_validation)
    _duplicates(req, api.sim.field_validation)
    _admit(api, req, 'CREATE', obj, None)
    return api.store.create(rt, obj, manager=_manager(req, headers),
                            operation=operation, unknown=unknown,
                            validate=_validator(api, req, 'CREATE'))


def update(api, req, obj, headers):
    rt = req.rt
    _check_kind(rt, obj)
    meta = obj.setdefault('metadata', {})
    if meta.get('name') != req.name:
        raise apistatus.bad_request(
            'the name of the object (%s) does not match the name on '
            'the URL (%s)' % (meta.get('name'), req.name))
    if rt.namespaced:
        if meta.get('namespace', req.namespace) != req.namespace:
            raise _namespace_mismatch()
        meta['namespace'] = req.namespace
    unknown = _unknown_fields(req, 'update', api.sim.field_validation)
    _duplicates(req, api.sim.field_validation)
    if not meta.get('resourceVersion'):
        raise apistatus.resource_version_required(rt, req.name)
    schema = api.store.schema(rt)
    if schema is not None and (req.query.get('fieldValidation') or
                               api.sim.field_validation) == 'Strict':
        # Strict decoding comes before the resourceVersion check.
        paths, _causes = schema.check(storage.clone(obj))
        if paths:
            unknown(paths)

    def build(current):
        if meta['resourceVersion'] != current['metadata']['resourceVersion']:
            raise apistatus.conflict(rt, req.name)
        return obj
    return api.store.mutate(rt, req.namespace, req.name,
                            _replace_with(api, req, build),
                            subresource=req.subresource,
                            manager=_manager(req, headers), unknown=unknown,
                            validate=_validator(api, req, 'UPDATE'))


def patch(api, req, body, headers):
    """Return ``(code, object)``: 201 when an apply patch creates."""
    ctype = headers.get('Content-Type', '')
    manager = req.query.get('fieldManager')
    media = ctype.split(';')[0].strip()
    if media not in patches.ACCEPTED and not (
            media == patches.STRATEGIC_MERGE_PATCH and not req.rt.custom):
        raise apistatus.unsupported_media_type(patches.ACCEPTED)
    apply = media == patches.APPLY_PATCH
    config = patches.apply_config(body, manager) if apply else None
    force = req.flag('force')
    schema = api.store.schema(req.rt)
    patched = []  # the patched JSON, for a Strict rejection
    unknown = _unknown_fields(req, 'patch', api.sim.field_validation,
                              None if apply else patched)
    strict = (req.query.get('fieldValidation')
              or api.sim.field_validation) == 'Strict'

    def build(current):
        if apply:
            named = dict(config, metadata=dict(config.get('metadata') or {},
                                               name=req.name))
            return fieldmanager.apply(req.rt, current, named, manager,
                                      force, schema, storage.now_iso())
        new = patches.apply(ctype, current, body, manager)
        if not isinstance(new, dict):
            raise apistatus.bad_request('patched object is not an object')
        new.setdefault('metadata', {})['name'] = req.name
        if strict and not apply:
            patched[:] = [storage.clone(new)]
        return new
    try:
        return 200, api.store.mutate(
            req.rt, req.namespace, req.name, _replace_with(api, req, build),
            subresource=req.subresource,
            manager=manager or _manager(req, headers),
            operation='Apply' if apply else 'Update', unknown=unknown,
            validate=_validator(api, req, 'UPDATE'))
    except apistatus.ApiError as exc:
        if exc.code != 404 or media != patches.APPLY_PATCH or \
                req.subresource or exc.details.get('name') != req.name:
            raise
    obj = fieldmanager.apply(req.rt, None, dict(config, metadata=dict(
        config.get('metadata') or {}, name=req.name)), manager, force,
        schema, storage.now_iso())
    return 201, create(api, req, obj, headers, operation='Apply')


def delete(api, req, body):
    options = encoding.json_body(body) if body else {}
    pre = options.get('preconditions') or {}
    policy = options.get('propagationPolicy')
    if policy is not None and \
            policy not in garbagecollector.PROPAGATION_FINALIZERS:
        raise apistatus.invalid('DeleteOptions', '', [
            apistatus.not_supported('propagationPolicy', policy, [
                'Foreground', 'Background', 'Orphan', 'nil'])],
            group='meta.k8s.io')
    terminate = None
    if req.rt.key == '/namespaces':
        current = api.store.get(req.rt, None, req.name)
        if (current.get('spec') or {}).get('finalizers'):
            terminate = namespaces.mark_terminating
    obj = api.store.delete(
        req.rt, req.namespace, req.name, uid=pre.get('uid'),
        resource_version=pre.get('resourceVersion'),
        finalizer=garbagecollector.PROPAGATION_FINALIZERS.get(policy),
        terminate=terminate)
    if obj['metadata'].get('finalizers') or terminate is not None:
        return obj
    details = {'name': obj['metadata']['name'], 'group': req.rt.group,
               'kind': req.rt.plural, 'uid': obj['metadata'].get('uid')}
    return _success(details={k: v for k, v in details.items() if v})


def delete_collection(api, req):
    """Delete the matching objects; answer the list of them."""
    match = selectors.matcher(req.query.get('labelSelector'),
                              req.query.get('fieldSelector'), req.rt)
    items, rv = api.store.snapshot(req.rt, req.namespace)
    deleted = []
    for obj in items:
        if match is None or match(obj):
            try:
                api.store.delete(req.rt, obj['metadata'].get('namespace'),
                                 obj['metadata']['name'])
            except apistatus.ApiError as exc:
                if exc.code != 404:
                    raise
            else:
                deleted.append(obj)
    meta = {'resourceVersion': str(rv)}
    if req.rt.custom:
        meta['continue'] = ''
    else:
        deleted = [{k: v for k, v in o.items()
                    if k not in ('apiVersion', 'kind')} for o in deleted]
    return {'apiVersion': req.rt.api_version, 'kind': req.rt.kind + 'List',
            'metadata': meta, 'items': deleted}


def _success(**fields):
    return dict({'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                 'status': 'Success'}, **fields)


def _replace_with(api, req, build):
    """A ``store.mutate`` function: the object becomes ``build(current)``.

    Admission sees the new object and the old one (main resource only).
    """
    def replace(current):
        old = storage.clone(current)
        new = build(current)
        current.clear()
        current.update(new)
        if req.subresource is None:
            _admit(api, req, 'UPDATE', current, old)
    return replace


def _validator(api, req, operation):
    """The store's ``validate(new, old)``: validating admission, or None."""
    hooks = api.sim.validation.get(req.rt.key)
    if not hooks or req.subresource is not None:
        return None

    def validate(new, old):
        for fn in hooks:
            fn(operation, new, old, req.user)
    return validate


def _unknown_fields(req, verb, field_validation, patched=None):
    """The store's ``unknown`` callback for ``fieldValidation``.

    None (prune silently) for Ignore and for types without a schema;
    raises 422 for an unsupported directive.
    """
    directive = req.query.get('fieldValidation') or field_validation
    if directive not in schemas.DIRECTIVES:
        raise apistatus.invalid(OPTIONS[verb], '', [apistatus.not_supported(
            'fieldValidation', directive, [''] + sorted(schemas.DIRECTIVES))],
            group='meta.k8s.io')
    if directive == 'Ignore':
        return lambda paths: None
    rt = req.rt

    def unknown(paths):
        messages = schemas.strict_messages(paths)
        if directive == 'Warn':
            req.warnings.extend(messages)
        elif patched is None:
            raise apistatus.strict_decoding(rt, messages)
        else:
            raise apistatus.strict_patch(patched[0] if patched else {},
                                         messages)
    return unknown


def _duplicates(req, default):
    """Repeated keys of the body: Warnings, or 400 with Strict."""
    directive = req.query.get('fieldValidation') or default
    messages = ['duplicate field "%s"' % path for path in req.duplicates]
    if not messages or directive == 'Ignore':
        return
    if directive == 'Strict':
        raise apistatus.strict_decoding(req.rt, messages)
    req.warnings.extend(messages)


def _manager(req, headers):
    """``fieldManager``, else the User-Agent's product (as kube does)."""
    manager = req.query.get('fieldManager')
    if manager:
        return manager
    agent = headers.get('User-Agent') or 'unknown'
    return agent.split('/')[0]


def _admit(api, req, operation, new, old):
    if req.rt.key == '/secrets':
        builtins.admit_secret(req.rt, new, old)
    elif req.rt.key == '/namespaces':
        namespaces.prepare(new, old)
    for fn in api.sim.admission.get(req.rt.key, ()):
        fn(operation, new, old, req.user)


def _check_namespace(store, req, name):
    """404 if the object's namespace does not exist, 403 if terminating."""
    if not req.rt.namespaced:
        return
    try:
        ns_rt = store.resource('', 'namespaces')
    except KeyError:
        return
    namespace = store.get_ref(ns_rt, None, req.namespace)
    if namespace is None:
        raise apistatus.not_found(ns_rt, req.namespace)
    if namespace['metadata'].get('deletionTimestamp'):
        raise namespaces.terminating(req.rt, req.namespace, name)


def _check_kind(rt, obj):
    kind, api_version = obj.get('kind'), obj.get('apiVersion')
    if rt.custom and kind and kind != rt.kind and \
            api_version == rt.api_version:
        # The custom resource strategy validates the kind (422).
        raise apistatus.invalid(kind, obj.get('metadata', {}).get(
            'name', ''), [apistatus.invalid_value(
                'kind', '"%s"' % kind, 'must be ' + rt.kind)],
            group=rt.group)
    if (kind and kind != rt.kind) or (api_version and
                                      api_version != rt.api_version):
        raise apistatus.bad_request(
            'the API version in the data (%s) does not match the expected '
            'API version (%s)' % (api_version, rt.api_version)
            if api_version != rt.api_version else
            '%s in version "%s" cannot be handled as a %s: the kind does '
            'not match' % (kind, rt.version, rt.kind))


def _namespace_mismatch():
    return apistatus.bad_request(
        'the namespace of the provided object does not match the namespace '
        'sent on the request')
