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

"""Garbage collection and namespace deletion, as kube-controller-manager's
(checked against a real one by tests/differential)."""

import pytest
from tests.functional.simulator import apitools

call = apitools.call
W = '/apis/sim.example.com/v1/namespaces/%s/widgets'
pytestmark = pytest.mark.simulator(install=False)


def _owner_and_dependent(api, ns='default', block=None):
    _, owner = call(api, 'POST', W % ns, apitools.widget('owner', ns))
    ref = {'apiVersion': 'sim.example.com/v1', 'kind': 'Widget',
           'name': 'owner', 'uid': owner['metadata']['uid']}
    if block is not None:
        ref['blockOwnerDeletion'] = block
    dep = apitools.widget('dep', ns)
    dep['metadata']['ownerReferences'] = [ref]
    call(api, 'POST', W % ns, dep)
    return owner


def _gone(api, path):
    return call(api, 'GET', path)[0] == 404


def test_background_deletion_without_kubevirt(kube_client, simulator):
    _owner_and_dependent(kube_client)
    assert call(kube_client, 'DELETE', W % 'default' + '/owner')[0] == 200
    simulator.wait_for(lambda: _gone(kube_client, W % 'default' + '/dep'))


def test_foreground_deletion_waits_for_dependents(kube_client, simulator):
    _owner_and_dependent(kube_client, block=True)
    status, owner = call(kube_client, 'DELETE', W % 'default' + '/owner',
                         {'propagationPolicy': 'Foreground'})
    assert status == 200
    meta = owner['metadata']
    assert meta['finalizers'] == ['foregroundDeletion']
    assert meta['deletionTimestamp'] and meta['generation'] == 2
    simulator.wait_for(lambda: _gone(kube_client, W % 'default' + '/owner'))
    assert _gone(kube_client, W % 'default' + '/dep')


def test_orphan_deletion_unlinks_dependents(kube_client, simulator):
    _owner_and_dependent(kube_client)
    status, owner = call(kube_client, 'DELETE', W % 'default' + '/owner',
                         {'propagationPolicy': 'Orphan'})
    assert owner['metadata']['finalizers'] == ['orphan']
    simulator.wait_for(lambda: _gone(kube_client, W % 'default' + '/owner'))
    status, dep = call(kube_client, 'GET', W % 'default' + '/dep')
    assert status == 200 and 'ownerReferences' not in dep['metadata']
    # A removal takes no field: kube-controller-manager is no manager.
    assert [e['manager'] for e in dep['metadata']['managedFields']] == [
        'OpenAPI-Generator']


def test_unknown_propagation_policy_is_422(kube_client):
    call(kube_client, 'POST', W % 'default', apitools.widget('w'))
    status, answer = call(kube_client, 'DELETE', W % 'default' + '/w',
                          {'propagationPolicy': 'Sideways'})
    assert status == 422
    assert answer['message'] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: '
        'Unsupported value: "Sideways": supported values: "Foreground", '
        '"Background", "Orphan", "nil"')


def test_namespace_deletion_empties_then_deletes_it(kube_client, simulator):
    status, ns = call(kube_client, 'POST', '/api/v1/namespaces',
                      {'metadata': {'name': 'doomed'}})
    assert status == 201
    assert ns['spec'] == {'finalizers': ['kubernetes']}
    assert ns['status'] == {'phase': 'Active'}
    assert ns['metadata']['labels'] == {
        'kubernetes.io/metadata.name': 'doomed'}
    call(kube_client, 'POST', W % 'doomed', apitools.widget('a', 'doomed'))
    held = apitools.widget('held', 'doomed')
    held['metadata']['finalizers'] = ['example.com/hold']
    call(kube_client, 'POST', W % 'doomed', held)
    status, ns = call(kube_client, 'DELETE', '/api/v1/namespaces/doomed')
    assert status == 200
    assert ns['status'] == {'phase': 'Terminating'}
    assert ns['metadata']['deletionTimestamp']
    status, answer = call(kube_client, 'POST', W % 'doomed',
                          apitools.widget('late', 'doomed'))
    assert status == 403
    assert answer['message'] == (
        'widgets.sim.example.com "late" is forbidden: unable to create new '
        'content in namespace doomed because it is being terminated')
    assert answer['details']['causes'] == [{
        'reason': 'NamespaceTerminating', 'field': 'metadata.namespace',
        'message': 'namespace doomed is being terminated'}]
    simulator.wait_for(lambda: _gone(kube_client, W % 'doomed' + '/a'))
    assert call(kube_client, 'GET', '/api/v1/namespaces/doomed')[0] == 200
    call(kube_client, 'PATCH', W % 'doomed' + '/held',
         {'metadata': {'finalizers': None}})
    simulator.wait_for(lambda: _gone(kube_client,
                                     '/api/v1/namespaces/doomed'))
