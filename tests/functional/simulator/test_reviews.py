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

"""TokenReview, SubjectAccessReview and RBAC objects over HTTP."""

import json

from kubernetes import client
import pytest
from tests.functional.simulator import apitools

from sushy_kubevirt.simulator import reviews

pytestmark = pytest.mark.simulator(install=False)
RBAC = 'rbac.authorization.k8s.io'
KUBEVIRT, SUBRESOURCES = 'kubevirt.io', 'subresources.kubevirt.io'


@pytest.fixture
def rbac_api(kube_client):
    core = client.CoreV1Api(kube_client)
    for name in ('ns-a', 'ns-b'):
        core.create_namespace({'apiVersion': 'v1', 'kind': 'Namespace',
                               'metadata': {'name': name}})
    return client.RbacAuthorizationV1Api(kube_client)


@pytest.fixture
def review(kube_client):
    api = client.AuthorizationV1Api(kube_client)

    def ask(user=None, groups=None, **attributes):
        spec = {'user': user, 'groups': groups}
        if 'path' in attributes:
            spec['nonResourceAttributes'] = attributes
        else:
            spec['resourceAttributes'] = attributes
        answer = api.create_subject_access_review({
            'apiVersion': 'authorization.k8s.io/v1',
            'kind': 'SubjectAccessReview', 'spec': spec})
        return answer.status.allowed, answer.status.reason
    return ask


def _rule(groups, resources, verbs, names=None):
    rule = {'apiGroups': groups, 'resources': resources, 'verbs': verbs}
    if names:
        rule['resourceNames'] = names
    return rule


def _binding(kind, name, role_kind, role, subjects, namespace=None):
    meta = {'name': name}
    if namespace:
        meta['namespace'] = namespace
    return {'apiVersion': RBAC + '/v1', 'kind': kind, 'metadata': meta,
            'roleRef': {'apiGroup': RBAC, 'kind': role_kind, 'name': role},
            'subjects': subjects}


def _user(name, kind='User'):
    subject = {'kind': kind, 'name': name}
    if kind != 'ServiceAccount':
        subject['apiGroup'] = RBAC
    return subject


def _vm_operator(rbac_api, subjects):
    """Role vm-operator in ns-a: get/list VMs, start them; bound."""
    rbac_api.create_namespaced_role('ns-a', {
        'apiVersion': RBAC + '/v1', 'kind': 'Role',
        'metadata': {'name': 'vm-operator'},
        'rules': [_rule([KUBEVIRT], ['virtualmachines'], ['get', 'list']),
                  _rule([SUBRESOURCES], ['virtualmachines/start'],
                        ['update'])]})
    rbac_api.create_namespaced_role_binding('ns-a', _binding(
        'RoleBinding', 'vm-operators', 'Role', 'vm-operator', subjects))


def test_role_binding_grants_its_role_in_its_namespace(rbac_api, review):
    _vm_operator(rbac_api, [_user('alice')])
    reason = ('RBAC: allowed by RoleBinding "vm-operators/ns-a" of Role '
              '"vm-operator" to User "alice"')
    vms = dict(group=KUBEVIRT, resource='virtualmachines')
    assert review('alice', verb='get', namespace='ns-a', name='vm0',
                  **vms) == (True, reason)
    assert review('alice', verb='list', namespace='ns-a', **vms)[0]
    assert review('alice', verb='update', namespace='ns-a', name='vm0',
                  group=SUBRESOURCES, resource='virtualmachines',
                  subresource='start') == (True, reason)
    assert review('alice', verb='get', namespace='ns-b', **vms) == \
        (False, None)
    assert review('alice', verb='list', **vms) == (False, None)
    assert review('alice', verb='delete', namespace='ns-a', name='vm0',
                  **vms) == (False, None)
    assert review('alice', verb='update', namespace='ns-a', name='vm0',
                  group=SUBRESOURCES, resource='virtualmachines',
                  subresource='stop') == (False, None)
    assert review('bob', verb='get', namespace='ns-a', **vms) == \
        (False, None)
    assert not review('alice', verb='get', namespace='ns-a',
                      group='', resource='virtualmachines')[0]


def test_group_and_service_account_subjects(rbac_api, review):
    _vm_operator(rbac_api, [_user('operators', 'Group'),
                            _user('robot', 'ServiceAccount'),
                            dict(_user('far', 'ServiceAccount'),
                                 namespace='ns-b')])
    vms = dict(verb='list', namespace='ns-a', group=KUBEVIRT,
               resource='virtualmachines')
    allowed, reason = review('carol', ['x', 'operators'], **vms)
    assert allowed
    assert reason.endswith('to Group "operators"')
    assert review('carol', ['x'], **vms) == (False, None)
    assert review(None, ['operators'], **vms)[0]
    allowed, reason = review('system:serviceaccount:ns-a:robot', **vms)
    assert reason.endswith('to ServiceAccount "robot/ns-a"')
    assert review('system:serviceaccount:ns-b:robot', **vms)[0] is False
    allowed, reason = review('system:serviceaccount:ns-b:far', **vms)
    assert reason.endswith('to ServiceAccount "far/ns-b"')


def test_resource_names_limit_a_rule_to_named_requests(rbac_api, review):
    rbac_api.create_namespaced_role('ns-a', {
        'apiVersion': RBAC + '/v1', 'kind': 'Role',
        'metadata': {'name': 'vm0-only'},
        'rules': [_rule([KUBEVIRT], ['virtualmachines'],
                        ['get', 'list', 'update'], names=['vm0'])]})
    rbac_api.create_namespaced_role_binding('ns-a', _binding(
        'RoleBinding', 'dave-vm0', 'Role', 'vm0-only', [_user('dave')]))
    vms = dict(namespace='ns-a', group=KUBEVIRT, resource='virtualmachines')
    assert review('dave', verb='get', name='vm0', **vms)[0]
    assert review('dave', verb='update', name='vm0', **vms)[0]
    assert not review('dave', verb='get', name='vm1', **vms)[0]
    assert not review('dave', verb='list', **vms)[0]


def test_cluster_role_by_role_binding_and_cluster_binding(rbac_api, review):
    rbac_api.create_cluster_role({
        'apiVersion': RBAC + '/v1', 'kind': 'ClusterRole',
        'metadata': {'name': 'vm-viewer'},
        'rules': [_rule([KUBEVIRT], ['virtualmachines', '*/status'],
                        ['get'])]})
    rbac_api.create_namespaced_role_binding('ns-a', _binding(
        'RoleBinding', 'erin-views', 'ClusterRole', 'vm-viewer',
        [_user('erin')]))
    rbac_api.create_cluster_role_binding(_binding(
        'ClusterRoleBinding', 'frank-views', 'ClusterRole', 'vm-viewer',
        [_user('frank')]))
    vms = dict(verb='get', group=KUBEVIRT, resource='virtualmachines')
    assert review('erin', namespace='ns-a', **vms) == (True, (
        'RBAC: allowed by RoleBinding "erin-views/ns-a" of ClusterRole '
        '"vm-viewer" to User "erin"'))
    assert not review('erin', namespace='ns-b', **vms)[0]
    assert not review('erin', **vms)[0]
    frank = ('RBAC: allowed by ClusterRoleBinding "frank-views" of '
             'ClusterRole "vm-viewer" to User "frank"')
    assert review('frank', namespace='ns-b', **vms) == (True, frank)
    assert review('frank', **vms) == (True, frank)
    assert review('frank', namespace='ns-b', subresource='status',
                  **vms)[0]
    assert not review('frank', namespace='ns-b', subresource='console',
                      **vms)[0]


def test_wildcards_and_non_resource_urls(rbac_api, review):
    rbac_api.create_cluster_role({
        'apiVersion': RBAC + '/v1', 'kind': 'ClusterRole',
        'metadata': {'name': 'everything'},
        'rules': [_rule(['*'], ['*'], ['*']),
                  {'nonResourceURLs': ['/redfish/v1/*'], 'verbs': ['post']}]})
    rbac_api.create_cluster_role_binding(_binding(
        'ClusterRoleBinding', 'root', 'ClusterRole', 'everything',
        [_user('root')]))
    assert review('root', verb='deletecollection', namespace='ns-b',
                  group='cdi.kubevirt.io', resource='datavolumes')[0]
    assert review('root', path='/redfish/v1/Systems', verb='post')[0]
    assert not review('root', path='/redfish/v1', verb='post')[0]
    assert not review('root', path='/redfish/v1/Systems', verb='get')[0]
    assert not review('other', path='/redfish/v1/Systems', verb='post')[0]
    assert review('x', ['system:masters'], verb='delete',
                  resource='namespaces') == (True, None)


def test_missing_role_is_named_in_the_denial(rbac_api, review):
    rbac_api.create_namespaced_role_binding('ns-a', _binding(
        'RoleBinding', 'dangling', 'Role', 'absent', [_user('gina')]))
    assert review('gina', verb='get', namespace='ns-a', resource='pods') \
        == (False, 'RBAC: role.rbac.authorization.k8s.io "absent" not found')


def test_rbac_objects_round_trip(rbac_api):
    _vm_operator(rbac_api, [_user('alice')])
    role = rbac_api.read_namespaced_role('vm-operator', 'ns-a')
    assert role.rules[1].resources == ['virtualmachines/start']
    assert [b.metadata.name for b in rbac_api.list_namespaced_role_binding(
        'ns-a').items] == ['vm-operators']
    assert rbac_api.list_namespaced_role_binding('ns-b').items == []
    rbac_api.delete_namespaced_role_binding('vm-operators', 'ns-a')
    assert rbac_api.list_namespaced_role_binding('ns-a').items == []


def test_invalid_subject_access_review_is_422(kube_client):
    api = client.AuthorizationV1Api(kube_client)
    with pytest.raises(client.ApiException) as exc:
        api.create_subject_access_review({
            'apiVersion': 'authorization.k8s.io/v1',
            'kind': 'SubjectAccessReview', 'spec': {'user': 'u'}})
    assert exc.value.status == 422
    status = json.loads(exc.value.body)
    assert status['reason'] == 'Invalid'
    assert [c['field'] for c in status['details']['causes']] == \
        ['spec.resourceAttributes']


def test_token_review(simulator, kube_client):
    simulator.authz.add_token('t-sa', 'system:serviceaccount:ns-a:robot',
                              groups=['robots'])
    api = client.AuthenticationV1Api(kube_client)

    def ask(token):
        return api.create_token_review({
            'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenReview',
            'spec': {'token': token}}).status
    status = ask('t-sa')
    assert status.authenticated
    assert status.user.username == 'system:serviceaccount:ns-a:robot'
    assert status.user.groups == [
        'robots', 'system:serviceaccounts', 'system:serviceaccounts:ns-a',
        'system:authenticated']
    assert status.audiences == list(reviews.API_AUDIENCES)
    admin = ask(simulator.token)
    assert admin.user.groups == ['system:masters', 'system:authenticated']
    wrong = ask('not-a-token')
    assert not wrong.authenticated
    assert wrong.error == 'invalid bearer token'
    assert wrong.user.username is None


def test_reviews_are_create_only(simulator, kube_client):
    status, body = apitools.call(
        kube_client, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews',
        {'spec': {'token': simulator.token}})
    assert (status, body['status']['authenticated']) == (201, True)
    for path in ('/apis/authentication.k8s.io/v1/tokenreviews',
                 '/apis/authorization.k8s.io/v1/subjectaccessreviews'):
        status, body = apitools.call(kube_client, 'GET', path)
        assert (status, body['reason']) == (405, 'MethodNotAllowed')
        status, body = apitools.call(kube_client, 'DELETE', path + '/x')
        assert (status, body['reason']) == (404, 'NotFound')
    assert all(not simulator.store.snapshot(rt, None)[0]
               for rt in reviews.RESOURCES)
    status, body = apitools.call(
        kube_client, 'GET', '/apis/authorization.k8s.io/v1')
    assert body['resources'][0]['verbs'] == ['create']
