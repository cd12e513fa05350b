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

"""TokenReviews and SubjectAccessReviews asked of both servers, compared.

``test_reviews`` sets up the same Roles, ClusterRoles and bindings on one
server, asks every review and keeps the normalised answers (the
administrator's token and name replaced); ``test_compare`` compares the
two transcripts. kube-apiserver's RBAC authorizer reads from informers,
so the questions wait until a binding created last takes effect.
"""

import time

import pytest
from tests.differential import normalize
from tests.differential import recorder

pytestmark = pytest.mark.timeout(300)

BACKENDS = ('simulator', 'kube')
TRANSCRIPTS = {}
RBAC = 'rbac.authorization.k8s.io'
RBAC_PATH = '/apis/%s/v1' % RBAC
SAR_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews'
TOKEN_PATH = '/apis/authentication.k8s.io/v1/tokenreviews'
NS_A, NS_B = 'diff-reviews-a', 'diff-reviews-b'
KUBEVIRT, SUBRESOURCES = 'kubevirt.io', 'subresources.kubevirt.io'


def _rule(groups, resources, verbs, names=None):
    rule = {'apiGroups': groups, 'resources': resources, 'verbs': verbs}
    if names:
        rule['resourceNames'] = names
    return rule


def _role(kind, name, rules):
    return {'apiVersion': RBAC + '/v1', 'kind': kind,
            'metadata': {'name': name}, 'rules': rules}


def _binding(kind, name, role_kind, role, subjects):
    return {'apiVersion': RBAC + '/v1', 'kind': kind,
            'metadata': {'name': name},
            'roleRef': {'apiGroup': RBAC, 'kind': role_kind, 'name': role},
            'subjects': subjects}


def _subject(kind, name, namespace=None):
    subject = {'kind': kind, 'name': name}
    if kind != 'ServiceAccount':
        subject['apiGroup'] = RBAC
    if namespace:
        subject['namespace'] = namespace
    return subject


def _setup(s):
    """The roles and bindings; the sentinel binding is created last."""
    vms = [KUBEVIRT]
    objects = [
        ('namespaces/%s/roles' % NS_A, _role('Role', 'vm-operator', [
            _rule(vms, ['virtualmachines'], ['get', 'list']),
            _rule([SUBRESOURCES], ['virtualmachines/start'], ['update'])])),
        ('namespaces/%s/roles' % NS_A, _role('Role', 'vm0-only', [
            _rule(vms, ['virtualmachines'], ['get', 'update'], ['vm0'])])),
        ('clusterroles', _role('ClusterRole', 'diff-vm-viewer', [
            _rule(vms, ['virtualmachines', '*/status'], ['get'])])),
        ('clusterroles', _role('ClusterRole', 'diff-redfish', [
            {'nonResourceURLs': ['/redfish/v1/*'], 'verbs': ['post']}])),
        ('clusterroles', _role('ClusterRole', 'diff-everything', [
            _rule(['*'], ['*'], ['*'])])),
        ('namespaces/%s/rolebindings' % NS_A, _binding(
            'RoleBinding', 'vm-operators', 'Role', 'vm-operator', [
                _subject('User', 'diff-alice'),
                _subject('Group', 'diff-operators'),
                _subject('ServiceAccount', 'robot'),
                _subject('ServiceAccount', 'far', NS_B)])),
        ('namespaces/%s/rolebindings' % NS_A, _binding(
            'RoleBinding', 'dave-vm0', 'Role', 'vm0-only',
            [_subject('User', 'diff-dave')])),
        ('namespaces/%s/rolebindings' % NS_A, _binding(
            'RoleBinding', 'erin-views', 'ClusterRole', 'diff-vm-viewer',
            [_subject('User', 'diff-erin')])),
        ('namespaces/%s/rolebindings' % NS_A, _binding(
            'RoleBinding', 'dangling', 'Role', 'absent',
            [_subject('User', 'diff-gina')])),
        ('clusterrolebindings', _binding(
            'ClusterRoleBinding', 'diff-frank-views', 'ClusterRole',
            'diff-vm-viewer', [_subject('User', 'diff-frank')])),
        ('clusterrolebindings', _binding(
            'ClusterRoleBinding', 'diff-redfish', 'ClusterRole',
            'diff-redfish', [_subject('Group', 'diff-bmc')])),
        ('clusterrolebindings', _binding(
            'ClusterRoleBinding', 'diff-root', 'ClusterRole',
            'diff-everything', [_subject('User', 'diff-root')])),
        # Sentinels: the last Role, ClusterRole and bindings of each kind.
        ('namespaces/%s/roles' % NS_A, _role('Role', 'sentinel', [
            _rule([''], ['configmaps'], ['get'])])),
        ('clusterroles', _role('ClusterRole', 'diff-sentinel', [
            _rule([''], ['secrets'], ['get'])])),
        ('namespaces/%s/rolebindings' % NS_A, _binding(
            'RoleBinding', 'sentinel', 'Role', 'sentinel',
            [_subject('User', 'diff-sentinel')])),
        ('clusterrolebindings', _binding(
            'ClusterRoleBinding', 'diff-sentinel', 'ClusterRole',
            'diff-sentinel', [_subject('User', 'diff-sentinel')])),
    ]
    for path, body in objects:
        answer = s.post('%s/%s' % (RBAC_PATH, path), body, record=False)
        assert answer.status == 201, answer.body
    deadline = time.monotonic() + 30
    while not all(_allowed(s, 'diff-sentinel', verb='get', namespace=NS_A,
                           resource=resource)
                  for resource in ('configmaps', 'secrets')):
        assert time.monotonic() < deadline, 'the RBAC objects took no effect'
        time.sleep(0.1)


def _allowed(s, user, **attributes):
    answer = s.post(SAR_PATH, _sar(user, None, attributes), record=False)
    return answer['status']['allowed']


def _sar(user, groups, attributes):
    spec = {'user': user} if user else {}
    if groups:
        spec['groups'] = groups
    key = ('nonResourceAttributes' if 'path' in attributes
           else 'resourceAttributes')
    spec[key] = attributes
    return {'apiVersion': 'authorization.k8s.io/v1',
            'kind': 'SubjectAccessReview', 'spec': spec}


def _questions(s):
    vm = dict(group=KUBEVIRT, resource='virtualmachines')
    start = dict(group=SUBRESOURCES, resource='virtualmachines',
                 subresource='start')
    asked = [
        ('diff-alice', None, dict(vm, verb='get', namespace=NS_A,
                                  name='vm0')),
        ('diff-alice', None, dict(vm, verb='list', namespace=NS_A)),
        ('diff-alice', None, dict(start, verb='update', namespace=NS_A,
                                  name='vm0')),
        ('diff-alice', None, dict(vm, verb='get', namespace=NS_B)),
        ('diff-alice', None, dict(vm, verb='list')),
        ('diff-alice', None, dict(vm, verb='delete', namespace=NS_A,
                                  name='vm0')),
        ('diff-alice', None, dict(start, verb='update', namespace=NS_A,
                                  name='vm0', subresource='stop')),
        ('diff-bob', None, dict(vm, verb='get', namespace=NS_A)),
        ('diff-carol', ['x', 'diff-operators'], dict(
            vm, verb='list', namespace=NS_A)),
        (None, ['diff-operators'], dict(vm, verb='list', namespace=NS_A)),
        ('system:serviceaccount:%s:robot' % NS_A, None, dict(
            vm, verb='list', namespace=NS_A)),
        ('system:serviceaccount:%s:robot' % NS_B, None, dict(
            vm, verb='list', namespace=NS_A)),
        ('system:serviceaccount:%s:far' % NS_B, None, dict(
            vm, verb='list', namespace=NS_A)),
        ('diff-dave', None, dict(vm, verb='update', namespace=NS_A,
                                 name='vm0')),
        ('diff-dave', None, dict(vm, verb='get', namespace=NS_A,
                                 name='vm1')),
        ('diff-dave', None, dict(vm, verb='list', namespace=NS_A)),
        ('diff-erin', None, dict(vm, verb='get', namespace=NS_A)),
        ('diff-erin', None, dict(vm, verb='get', namespace=NS_B)),
        ('diff-frank', None, dict(vm, verb='get', namespace=NS_B)),
        ('diff-frank', None, dict(vm, verb='get')),
        ('diff-frank', None, dict(vm, verb='get', namespace=NS_B,
                                  subresource='status')),
        ('diff-frank', None, dict(vm, verb='get', namespace=NS_B,
                                  subresource='console')),
        ('diff-gina', None, dict(verb='get', namespace=NS_A,
                                 resource='pods')),
        ('diff-root', None, dict(verb='deletecollection', namespace=NS_B,
                                 group='cdi.kubevirt.io',
                                 resource='datavolumes')),
        ('diff-x', ['diff-bmc'], dict(path='/redfish/v1/Systems',
                                      verb='post')),
        ('diff-x', ['diff-bmc'], dict(path='/redfish/v1', verb='post')),
        ('diff-x', ['diff-bmc'], dict(path='/redfish/v1/Systems',
                                      verb='get')),
        ('diff-x', ['system:masters'], dict(verb='delete',
                                            resource='namespaces')),
    ]
    for user, groups, attributes in asked:
        s.post(SAR_PATH, _sar(user, groups, attributes))
    for spec in ({}, {'user': 'u', 'resourceAttributes': {'verb': 'get'},
                      'nonResourceAttributes': {'path': '/x',
                                                'verb': 'get'}}):
        s.post(SAR_PATH, {'apiVersion': 'authorization.k8s.io/v1',
                          'kind': 'SubjectAccessReview', 'spec': spec})


def _token_review(s, spec, admin):
    """A TokenReview, with the administrator's token and name replaced.

    They differ between the servers.
    """
    answer = s.post(TOKEN_PATH, {'apiVersion': 'authentication.k8s.io/v1',
                                 'kind': 'TokenReview', 'spec': spec},
                    record=False)
    body = s.norm.body(answer.body)
    if body.get('kind') == 'TokenReview':
        if body['spec'].get('token') == s.backend.token:
            body['spec']['token'] = '<admin token>'
        user = body['status']['user']
        if user.get('username') == admin:
            user['username'] = user['uid'] = '<admin>'
    s.transcript.append({'request': 'POST %s %s' % (TOKEN_PATH, sorted(
        spec)), 'status': answer.status, 'body': body})


def _token_reviews(s):
    admin = s.post(TOKEN_PATH, {'spec': {'token': s.backend.token}},
                   record=False)['status']['user']['username']
    _token_review(s, {'token': s.backend.token}, admin)
    _token_review(s, {'token': s.backend.token, 'audiences': ['other']},
                  admin)
    _token_review(s, {'token': 'not-a-token'}, admin)
    _token_review(s, {}, admin)
    s.get(TOKEN_PATH)
    s.get(SAR_PATH)
    s.delete(TOKEN_PATH + '/x')


@pytest.mark.parametrize('backend', BACKENDS, indirect=True)
def test_reviews(backend):
    session = recorder.Session(backend, NS_A)
    for name in (NS_A, NS_B):
        answer = session.post('/api/v1/namespaces', {
            'apiVersion': 'v1', 'kind': 'Namespace',
            'metadata': {'name': name}}, record=False)
        assert answer.status == 201, answer.body
    _setup(session)
    _questions(session)
    _token_reviews(session)
    TRANSCRIPTS[backend.name] = session.transcript


def test_compare():
    sim, kube = TRANSCRIPTS.get('simulator'), TRANSCRIPTS.get('kube')
    if sim is None or kube is None:
        pytest.skip('the reviews did not run on both servers')
    assert len(sim) == len(kube)
    found = ['#%d %s %s: simulator %r, kube %r' % (
        i, a.get('request'), path, left, right)
        for i, (a, b) in enumerate(zip(sim, kube))
        for path, left, right in normalize.differences(a, b)]
    assert not found, '\n'.join(found)
