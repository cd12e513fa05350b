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

"""The ``kubernetes`` accounts source: bearer tokens, decided by RBAC.

A Redfish password is a ServiceAccount's token; the cluster's Roles and
bindings (created here as an administrator would) decide what each
identity may do, through TokenReviews and SubjectAccessReviews. On the
real backend kube-apiserver's own authenticator and RBAC authorizer
answer them; the shipped ``kubernetes-accounts`` component lets the
emulator ask.
"""

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.events import receiver as receivermod

from sushy_kubevirt.kubevirt import identity

OWN, FOREIGN = 'ns-000', 'ns-001'
TTL = 1
RBAC = '/apis/rbac.authorization.k8s.io/v1'
FAST = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1}
SESSIONS = '/redfish/v1/SessionService/Sessions'
VMS = ('kubevirt.io', 'virtualmachines')
#: Role name -> its rules, bound in OWN.
ROLES = {
    'vm-operator': [
        {'apiGroups': ['kubevirt.io'], 'resources': ['virtualmachines'],
         'verbs': ['get', 'list', 'patch']},
        {'apiGroups': ['subresources.kubevirt.io'],
         'resources': ['virtualmachines/start', 'virtualmachines/stop',
                       'virtualmachines/restart'], 'verbs': ['update']}],
    'vm-viewer': [
        {'apiGroups': ['kubevirt.io'], 'resources': ['virtualmachines'],
         'verbs': ['get', 'list']}],
}


def created(status_body):
    status, body = status_body
    assert status in (200, 201), body
    return body


def bind(sim, name, role, user, namespace=OWN, kind='Role'):
    path = RBAC + ('/namespaces/%s/rolebindings' % namespace
                   if kind == 'Role' else '/clusterrolebindings')
    return created(backend.admin_request(sim, 'POST', path, {
        'apiVersion': 'rbac.authorization.k8s.io/v1',
        'kind': 'RoleBinding' if kind == 'Role' else 'ClusterRoleBinding',
        'metadata': {'name': name} if kind != 'Role' else {
            'name': name, 'namespace': namespace},
        'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': kind,
                    'name': role},
        'subjects': [{'kind': 'User', 'name': user,
                      'apiGroup': 'rbac.authorization.k8s.io'}]}))


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=4, namespaces=2, stage_delays=FAST)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def users(sim):
    """name -> (token, Kubernetes user name)."""
    backend.allow_reviews(sim)
    for role, rules in ROLES.items():
        created(backend.admin_request(
            sim, 'POST', RBAC + '/namespaces/%s/roles' % OWN, {
                'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
                'metadata': {'name': role, 'namespace': OWN},
                'rules': rules}))
    found = {name: backend.service_account_token(sim, OWN, name)
             for name in ('team-a', 'viewer', 'outsider')}
    bind(sim, 'team-a', 'vm-operator', found['team-a'][1])
    bind(sim, 'viewer', 'vm-viewer', found['viewer'][1])
    return found


@pytest.fixture(scope='module')
def emulator(sim, users, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('kube-accounts')
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE='kubernetes',
        SUSHY_EMULATOR_KUBEVIRT_ACCESS_CACHE_TTL=TTL,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE='default',
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_RETRY_INTERVAL=0)
    with harness.InProcess(config) as server:
        yield server


@pytest.fixture(scope='module')
def systems(sim):
    """namespace -> its Systems' paths."""
    found = {}
    for vm in sim.store.list(sim.store.resource(*VMS))[0]:
        found.setdefault(vm['metadata']['namespace'], []).append(
            '/redfish/v1/Systems/%s' % identity.firmware_uuid(vm))
    return {ns: sorted(paths) for ns, paths in found.items()}


def as_user(emulator, users, name):
    session = requests.Session()
    session.auth = ('any-name', users[name][0])
    return lambda method, path, **kw: session.request(
        method, emulator.url + path, timeout=30, allow_redirects=False, **kw)


def listed(call):
    answer = call('GET', '/redfish/v1/Systems')
    assert answer.status_code == 200, answer.text
    return sorted(m['@odata.id'] for m in answer.json()['Members'])


def versions(sim):
    items, _ = sim.store.list(sim.store.resource(*VMS))
    return {vm['metadata']['name']: vm['metadata']['resourceVersion']
            for vm in items}


def test_a_token_is_an_identity_that_reaches_its_namespaces(
        emulator, users, systems):
    assert listed(as_user(emulator, users, 'team-a')) == systems[OWN]
    assert listed(as_user(emulator, users, 'viewer')) == systems[OWN]
    assert listed(as_user(emulator, users, 'outsider')) == []
    bad = requests.get(emulator.url + '/redfish/v1/Systems',
                       auth=('x', 'not-a-token'), timeout=30)
    assert bad.status_code == 401, bad.text
    unauthenticated = requests.get(emulator.url + '/redfish/v1/Systems',
                                   timeout=30)
    assert unauthenticated.status_code == 401


def test_rbac_decides_each_operation(sim, emulator, users, systems):
    team, viewer = (as_user(emulator, users, name)
                    for name in ('team-a', 'viewer'))
    own, foreign = systems[OWN][0], systems[FOREIGN][0]
    before = versions(sim)
    for call, method, path, body in (
            (viewer, 'POST', own + '/Actions/ComputerSystem.Reset',
             {'ResetType': 'On'}),
            (viewer, 'PATCH', own, {'Boot': {
                'BootSourceOverrideTarget': 'Pxe',
                'BootSourceOverrideEnabled': 'Continuous'}}),
            (team, 'POST', own + '/VirtualMedia/Cd/Actions/'
             'VirtualMedia.InsertMedia', {'Image': 'http://127.0.0.1:9/x'}),
            (team, 'GET', '/metrics', None)):
        answer = call(method, path, json=body)
        assert answer.status_code == 403, (method, path, answer.text)
        assert 'InsufficientPrivilege' in answer.text
    for call, path in ((team, foreign), (viewer, foreign),
                       (as_user(emulator, users, 'outsider'), own)):
        assert call('GET', path).status_code == 404
        assert call('POST', path + '/Actions/ComputerSystem.Reset', json={
            'ResetType': 'On'}).status_code == 404
    assert versions(sim) == before
    assert viewer('GET', own).status_code == 200
    answer = team('PATCH', own, json={'Boot': {
        'BootSourceOverrideTarget': 'Pxe',
        'BootSourceOverrideEnabled': 'Continuous'}})
    assert answer.status_code in (200, 204), answer.text
    answer = team('POST', own + '/Actions/ComputerSystem.Reset',
                  json={'ResetType': 'On'})
    assert answer.status_code == 204, answer.text


def test_a_session_keeps_the_identity(emulator, users, systems):
    login = requests.post(emulator.url + SESSIONS, json={
        'UserName': 'ignored', 'Password': users['viewer'][0]}, timeout=30)
    assert login.status_code == 201, login.text
    assert login.json()['UserName'] == users['viewer'][1]
    headers = {'X-Auth-Token': login.headers['X-Auth-Token']}

    def call(method, path, **kw):
        return requests.request(method, emulator.url + path, timeout=30,
                                headers=headers, **kw)
    assert listed(call) == systems[OWN]
    assert call('POST', systems[OWN][0] + '/Actions/ComputerSystem.Reset',
                json={'ResetType': 'ForceOff'}).status_code == 403
    assert call('DELETE', login.headers['Location']).status_code == 204
    refused = requests.post(emulator.url + SESSIONS, json={
        'UserName': 'x', 'Password': 'not-a-token'}, timeout=30)
    assert refused.status_code == 401


def test_rbac_changes_apply_within_the_cache_time(
        sim, emulator, users, systems):
    team = as_user(emulator, users, 'team-a')
    assert team('GET', '/metrics').status_code == 403
    created(backend.admin_request(sim, 'POST', RBAC + '/clusterroles', {
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole',
        'metadata': {'name': 'redfish-metrics'},
        'rules': [{'nonResourceURLs': ['/metrics'], 'verbs': ['get']}]}))
    bind(sim, 'redfish-metrics', 'redfish-metrics', users['team-a'][1],
         kind='ClusterRole')
    harness.wait_until(lambda: team('GET', '/metrics').status_code == 200,
                       TTL + 10, 0.2, 'metrics granted')

    viewer = as_user(emulator, users, 'viewer')
    assert viewer('GET', systems[OWN][0]).status_code == 200
    status, body = backend.admin_request(
        sim, 'DELETE', RBAC + '/namespaces/%s/rolebindings/viewer' % OWN)
    assert status == 200, body
    # Within the cache time, plus the API server's own RBAC cache and a
    # loaded machine's delays.
    harness.wait_until(
        lambda: viewer('GET', systems[OWN][0]).status_code == 404,
        TTL + 10, 0.2, 'access revoked')


def test_a_subscription_gets_the_events_its_owner_may_read(
        sim, emulator, users):
    team = as_user(emulator, users, 'team-a')
    subscriptions = '/redfish/v1/EventService/Subscriptions'
    created(backend.admin_request(sim, 'POST', RBAC + '/clusterroles', {
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole',
        'metadata': {'name': 'redfish-subscriber'},
        'rules': [{'nonResourceURLs': [subscriptions, subscriptions + '/*'],
                   'verbs': ['post', 'delete']}]}))
    bind(sim, 'redfish-subscriber', 'redfish-subscriber',
         users['team-a'][1], kind='ClusterRole')
    with receivermod.Receiver() as receiver:
        answer = harness.wait_until(lambda: _subscribe(team, receiver.url),
                                    TTL + 10, 0.2, 'subscription granted')
        mine = {}
        for namespace in (FOREIGN, OWN):
            vm = sim.store.list(sim.store.resource(*VMS), namespace)[0][-1]
            name = vm['metadata']['name']
            sim.store.mutate(sim.store.resource(*VMS), namespace, name,
                             _more_cores)
            mine[namespace] = '/redfish/v1/Systems/%s' % (
                identity.firmware_uuid(vm))
        # The foreign change came first: had it been sent, it would be
        # here before the own one.
        receiver.wait(lambda r: r.matching(mine[OWN]))
        assert {e['OriginOfCondition']['@odata.id']
                for e in receiver.events()} == {mine[OWN]}
        assert team('DELETE', answer.headers['Location']).status_code == 204


def _subscribe(call, destination):
    answer = call('POST', '/redfish/v1/EventService/Subscriptions', json={
        'Destination': destination, 'Protocol': 'Redfish',
        'RegistryPrefixes': ['ResourceEvent']})
    return answer if answer.status_code == 201 else None


def _more_cores(vm):
    domain = vm['spec']['template']['spec']['domain']
    domain.setdefault('cpu', {})['cores'] = 5
