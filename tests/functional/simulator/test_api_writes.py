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

"""Writes through the official client: create/get/PUT/PATCH/DELETE."""

import json

from kubernetes import client
import pytest
from tests.functional.simulator import apitools

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)


def test_create_conflict_is_already_exists(custom):
    apitools.create(custom, 'w1')
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'w1')
    assert exc.value.status == 409
    assert apitools.body(exc.value) == {
        'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
        'status': 'Failure', 'reason': 'AlreadyExists', 'code': 409,
        'message': 'widgets.sim.example.com "w1" already exists',
        'details': {'name': 'w1', 'group': 'sim.example.com',
                    'kind': 'widgets'}}


def test_create_in_missing_namespace_is_404(custom):
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'w1', namespace='nowhere')
    assert exc.value.status == 404
    assert apitools.body(
        exc.value)['message'] == 'namespaces "nowhere" not found'


def test_get_missing_is_not_found_status(custom):
    with pytest.raises(client.ApiException) as exc:
        custom.get_namespaced_custom_object(G, V, 'default', P, 'nope')
    assert exc.value.status == 404
    status = apitools.body(exc.value)
    assert status['reason'] == 'NotFound'
    assert status['message'] == 'widgets.sim.example.com "nope" not found'
    assert status['details'] == {'name': 'nope', 'group': 'sim.example.com',
                                 'kind': 'widgets'}


def test_put_without_resource_version_is_invalid(custom):
    obj = apitools.create(custom, 'w1')
    del obj['metadata']['resourceVersion']
    with pytest.raises(client.ApiException) as exc:
        custom.replace_namespaced_custom_object(G, V, 'default', P, 'w1',
                                                obj)
    assert exc.value.status == 422
    status = apitools.body(exc.value)
    assert status['reason'] == 'Invalid'
    # The registry store names the resource, not the kind, here.
    assert status['message'] == (
        'widgets.sim.example.com "w1" is invalid: metadata.resourceVersion: '
        'Invalid value: 0: must be specified for an update')
    assert status['details']['kind'] == 'widgets'
    assert status['details']['group'] == 'sim.example.com'
    assert status['details']['causes'] == [{
        'reason': 'FieldValueInvalid', 'field': 'metadata.resourceVersion',
        'message': 'Invalid value: 0: must be specified for an update'}]


def test_put_with_stale_resource_version_conflicts(custom):
    obj = apitools.create(custom, 'w1')
    fresh = dict(obj, spec={'size': 2})
    custom.replace_namespaced_custom_object(G, V, 'default', P, 'w1', fresh)
    obj['spec'] = {'size': 3}
    with pytest.raises(client.ApiException) as exc:
        custom.replace_namespaced_custom_object(G, V, 'default', P, 'w1',
                                                obj)
    assert exc.value.status == 409
    status = apitools.body(exc.value)
    assert status['reason'] == 'Conflict'
    assert status['message'] == (
        'Operation cannot be fulfilled on widgets.sim.example.com "w1": '
        'the object has been modified; please apply your changes to the '
        'latest version and try again')


def _json_patch(custom, ops, name='w1'):
    # A list body keeps the client's json-patch content type.
    return custom.patch_namespaced_custom_object(
        G, V, 'default', P, name, ops,
        _content_type='application/json-patch+json')


def test_json_patch_with_passing_test_applies(custom):
    obj = apitools.create(custom, 'w1')
    rv = obj['metadata']['resourceVersion']
    out = _json_patch(custom, [
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': rv},
        {'op': 'replace', 'path': '/spec/size', 'value': 5},
        {'op': 'add', 'path': '/spec/tags', 'value': ['a']},
        {'op': 'add', 'path': '/spec/tags/-', 'value': 'b'}])
    assert out['spec'] == {'size': 5, 'tags': ['a', 'b']}
    assert out['metadata']['resourceVersion'] != rv


def test_json_patch_failed_test_is_generic_422(custom, simulator):
    obj = apitools.create(custom, 'w1')
    before = simulator.store.resource_version
    with pytest.raises(client.ApiException) as exc:
        _json_patch(custom, [
            {'op': 'test', 'path': '/metadata/resourceVersion',
             'value': str(int(obj['metadata']['resourceVersion']) - 1)},
            {'op': 'replace', 'path': '/spec/size', 'value': 9}])
    assert exc.value.status == 422
    # kube-apiserver wraps the json-patch error in NewGenericServerResponse
    # (isUnexpectedResponse=false): generic message, empty details.
    assert apitools.body(exc.value) == {
        'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
        'status': 'Failure', 'reason': 'Invalid', 'details': {},
        'code': 422, 'message': 'the server rejected our request due to an '
                                'error in our request'}
    assert simulator.store.resource_version == before
    got = custom.get_namespaced_custom_object(G, V, 'default', P, 'w1')
    assert got['spec'] == {'size': 1}


def test_json_patch_missing_path_is_422(custom):
    apitools.create(custom, 'w1')
    with pytest.raises(client.ApiException) as exc:
        _json_patch(custom, [{'op': 'remove', 'path': '/spec/missing'}])
    assert exc.value.status == 422


def test_merge_patch_and_null_removes(custom):
    apitools.create(custom, 'w1', spec={'size': 1, 'color': 'red'})
    out = custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w1', {'spec': {'color': None, 'shape': 'o'}})
    assert out['spec'] == {'size': 1, 'shape': 'o'}


def test_patch_with_stale_resource_version_conflicts(custom):
    obj = apitools.create(custom, 'w1')
    custom.patch_namespaced_custom_object(G, V, 'default', P, 'w1',
                                          {'spec': {'size': 2}})
    with pytest.raises(client.ApiException) as exc:
        custom.patch_namespaced_custom_object(
            G, V, 'default', P, 'w1',
            {'metadata': {'resourceVersion':
                          obj['metadata']['resourceVersion']},
             'spec': {'size': 3}})
    assert exc.value.status == 409
    assert apitools.body(exc.value)['reason'] == 'Conflict'


def test_strategic_merge_patch_is_415(kube_client, custom):
    apitools.create(custom, 'w1')
    code, _headers, data = apitools.raw(
        kube_client, 'PATCH',
        '/apis/sim.example.com/v1/namespaces/default/widgets/w1',
        body={'spec': {}},
        headers={'Content-Type': 'application/strategic-merge-patch+json'})
    assert code == 415
    status = json.loads(data)
    assert status['reason'] == 'UnsupportedMediaType'
    assert status['message'] == (
        'the body of the request was in an unknown format - accepted media '
        'types include: application/json-patch+json, '
        'application/merge-patch+json, application/apply-patch+yaml')


def test_apply_patch_creates_then_owns_and_needs_manager(custom):
    apply = dict(_content_type='application/apply-patch+yaml')
    # Like kube-apiserver, an apply that creates answers 201, which the
    # generated client does not deserialise (None).
    custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w2', apitools.widget('w2'), field_manager='me',
        **apply)
    out = custom.get_namespaced_custom_object(G, V, 'default', P, 'w2')
    managers = [e['manager'] for e in out['metadata']['managedFields']]
    assert 'me' in managers
    out = custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w2', {'apiVersion': 'sim.example.com/v1',
                                   'kind': 'Widget',
                                   'spec': {'color': 'blue'}},
        field_manager='me', **apply)
    # Server-side apply: what "me" no longer applies (and nobody else
    # owns) is removed.
    assert out['spec'] == {'color': 'blue'}
    with pytest.raises(client.ApiException) as exc:
        custom.patch_namespaced_custom_object(
            G, V, 'default', P, 'w2', apitools.widget('w2'), **apply)
    assert exc.value.status == 422


def test_delete_without_finalizers_answers_success_status(custom):
    obj = apitools.create(custom, 'w1')
    out = custom.delete_namespaced_custom_object(G, V, 'default', P, 'w1')
    assert out == {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                   'status': 'Success',
                   'details': {'name': 'w1', 'group': 'sim.example.com',
                               'kind': 'widgets',
                               'uid': obj['metadata']['uid']}}
    with pytest.raises(client.ApiException) as exc:
        custom.delete_namespaced_custom_object(G, V, 'default', P, 'w1')
    assert exc.value.status == 404


def test_delete_with_finalizers_marks_then_deletes(custom):
    obj = apitools.widget('w1')
    obj['metadata']['finalizers'] = ['example.com/keep']
    custom.create_namespaced_custom_object(G, V, 'default', P, obj)
    out = custom.delete_namespaced_custom_object(G, V, 'default', P, 'w1')
    assert out['metadata']['deletionTimestamp']
    assert out['metadata']['finalizers'] == ['example.com/keep']
    got = custom.get_namespaced_custom_object(G, V, 'default', P, 'w1')
    assert got['metadata']['deletionTimestamp']
    custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w1', {'metadata': {'finalizers': None}})
    with pytest.raises(client.ApiException) as exc:
        custom.get_namespaced_custom_object(G, V, 'default', P, 'w1')
    assert exc.value.status == 404


def test_status_subresource_split(custom):
    body = apitools.widget('w1')
    body['status'] = {'phase': 'ignored'}
    obj = custom.create_namespaced_custom_object(G, V, 'default', P, body)
    assert 'status' not in obj
    out = custom.patch_namespaced_custom_object_status(
        G, V, 'default', P, 'w1', {'status': {'phase': 'Ready'},
                                   'spec': {'size': 99}})
    assert out['status'] == {'phase': 'Ready'}
    assert out['spec'] == {'size': 1}
    assert out['metadata']['generation'] == 1
    out['status'] = {'phase': 'Changed'}
    out['spec'] = {'size': 2}
    out = custom.replace_namespaced_custom_object(G, V, 'default', P, 'w1',
                                                  out)
    assert out['status'] == {'phase': 'Ready'}
    assert out['spec'] == {'size': 2}
    assert out['metadata']['generation'] == 2
    got = custom.get_namespaced_custom_object_status(G, V, 'default', P,
                                                     'w1')
    assert got['status'] == {'phase': 'Ready'}


def test_core_v1_secret_round_trip(kube_client):
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_secret('default', client.V1Secret(
        metadata=client.V1ObjectMeta(name='s1'),
        string_data={'user': 'u'}))
    got = core.read_namespaced_secret('s1', 'default')
    assert got.metadata.resource_version
    assert got.data == {'user': 'dQ=='} and not got.string_data
    assert [s.metadata.name for s in
            core.list_namespaced_secret('default').items] == ['s1']
    status = core.delete_namespaced_secret('s1', 'default')
    status = status if isinstance(status, dict) else status.to_dict()
    assert status['status'] == 'Success'
