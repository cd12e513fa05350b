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

"""TokenReview and SubjectAccessReview, answered on create, never stored.

As kube-apiserver's review REST storages: a POST answers 201 with the
review, its managedFields and its ``status``; any other verb on the
collection is 405 and any request naming one is 404 (the routes do not
exist; the simulator answers these as it routes the path, before
authentication). A TokenReview authenticates ``spec.token`` against the
simulator's static tokens (``auth``) for the API audience; a
SubjectAccessReview is validated (422) and decided by kube-apiserver's
authorizer chain: the ``system:masters`` group, then RBAC (``rbac``).
"""

import json

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import auth
from sushy_kubevirt.simulator import fieldmanager
from sushy_kubevirt.simulator import rbac
from sushy_kubevirt.simulator import storage

TOKENREVIEWS = storage.ResourceType(
    'authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview',
    namespaced=False, status_subresource=False, custom=False)
SUBJECTACCESSREVIEWS = storage.ResourceType(
    'authorization.k8s.io', 'v1', 'subjectaccessreviews',
    'SubjectAccessReview', namespaced=False, status_subresource=False,
    custom=False)
RESOURCES = (TOKENREVIEWS, SUBJECTACCESSREVIEWS)
VERBS = ['create']
#: kube-apiserver's default API audience: its service account issuer.
API_AUDIENCES = ('https://kubernetes.default.svc.cluster.local',)
#: Pointer-to-struct and map fields: their own entry in managedFields.
_MEMBERS = ('resourceAttributes', 'nonResourceAttributes', 'extra')


class _RouteError(apistatus.ApiError):
    """go-restful's answer for a missing route: a Status, empty details."""

    def to_status(self):
        return dict(super().to_status(), details={})


def is_review(rt):
    return rt is not None and rt.key in HANDLERS


def not_served(req):
    """The answer to anything but a create of the collection."""
    if req.name:
        return _RouteError(404, 'NotFound', 'the server could not find the '
                           'requested resource')
    return _RouteError(405, 'MethodNotAllowed', 'the server does not allow '
                       'this method on the requested resource')


def create(sim, rt, review, manager):
    """The answered review (201) for a create of ``rt``."""
    spec = _omit_empty(review.get('spec') or {})
    meta = dict(review.get('metadata') or {})
    meta.pop('managedFields', None)
    answer = {'kind': rt.kind, 'apiVersion': rt.api_version,
              'metadata': meta, 'spec': spec}
    paths = fieldmanager.fields(rt, answer)
    for member in _MEMBERS:
        if member in spec:
            paths[('f:spec', 'f:' + member)] = fieldmanager.MAP
    if paths:
        meta['managedFields'] = [{
            'manager': manager, 'operation': 'Update',
            'apiVersion': rt.api_version, 'time': storage.now_iso(),
            'fieldsType': 'FieldsV1',
            'fieldsV1': fieldmanager.to_fields_v1(paths)}]
    answer['status'] = HANDLERS[rt.key](sim, answer)
    return answer


def _token_review(sim, review):
    spec = review['spec']
    if not spec.get('token'):
        raise apistatus.bad_request(
            'token is required for TokenReview in authentication')
    identity = sim.authz.identity(spec['token'])
    targets = spec.get('audiences') or API_AUDIENCES
    audiences = [a for a in API_AUDIENCES if a in targets]
    if identity is None or not audiences:
        return {'user': {}, 'error': 'invalid bearer token'}
    user, groups = identity
    return {'authenticated': True,
            'user': {'username': user, 'uid': user, 'groups': groups},
            'audiences': audiences}


def _subject_access_review(sim, review):
    spec = review['spec']
    _validate(review)
    groups = spec.get('groups') or []
    if auth.MASTERS in groups:
        return {'allowed': True}
    resource = spec.get('resourceAttributes')
    if resource is not None:
        attributes = {key: resource.get(key, '') for key in (
            'namespace', 'verb', 'group', 'resource', 'subresource', 'name')}
    else:
        attributes = dict(spec['nonResourceAttributes'])
        attributes.setdefault('path', '')
    allowed, reason = rbac.authorize(sim.store, spec.get('user', ''),
                                     groups, attributes)
    status = {'allowed': allowed}
    if reason:
        status['reason'] = reason
    return status


def _validate(review):
    """kube's ValidateSubjectAccessReview: 422 with its causes."""
    spec, causes = review['spec'], []
    resource = spec.get('resourceAttributes')
    other = spec.get('nonResourceAttributes')
    if resource is not None and other is not None:
        value = {'Path': other.get('path', ''), 'Verb': other.get('verb', '')}
        causes.append(apistatus.invalid_value(
            'spec.nonResourceAttributes', _go_json(value),
            'cannot be specified in combination with resourceAttributes'))
    if resource is None and other is None:
        causes.append(apistatus.invalid_value(
            'spec.resourceAttributes', 'null', 'exactly one of '
            'nonResourceAttributes or resourceAttributes must be specified'))
    if not spec.get('user') and not spec.get('groups'):
        causes.append(apistatus.invalid_value(
            'spec.user', json.dumps(spec.get('user', '')),
            'at least one of user or group must be specified'))
    meta = review['metadata']
    if any(key != 'managedFields' for key in meta):
        causes.append(apistatus.invalid_value('metadata', _go_json(meta),
                                              'must be empty'))
    if causes:
        raise apistatus.invalid('', '', causes,
                                group=SUBJECTACCESSREVIEWS.group)


def _go_json(value):
    return json.dumps(value, separators=(',', ':'))


def _omit_empty(value):
    """The spec as Go encodes it back: empty fields omitted."""
    if isinstance(value, dict):
        return {k: _omit_empty(v) for k, v in value.items()
                if v not in (None, '', [], {}) or (v == {} and
                                                   k in _MEMBERS[:2])}
    return value


HANDLERS = {TOKENREVIEWS.key: _token_review,
            SUBJECTACCESSREVIEWS.key: _subject_access_review}
