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

"""Built-in types (Secrets, Leases) as kube-apiserver serves them
(checked against a real one by tests/differential)."""

import pytest
from tests.functional.simulator import apitools

call = apitools.call
S = '/api/v1/namespaces/default/secrets'
pytestmark = pytest.mark.simulator(install=False)


def test_secret_defaults_and_folds_without_generation(kube_client):
    status, secret = call(kube_client, 'POST', S, {
        'metadata': {'name': 's'}, 'stringData': {'user': 'admin'},
        'data': {'user': 'b3RoZXI=', 'pw': 'cHc='}})
    assert status == 201
    assert secret['type'] == 'Opaque'
    assert secret['data'] == {'user': 'YWRtaW4=', 'pw': 'cHc='}
    assert 'generation' not in secret['metadata']
    assert secret['metadata']['managedFields'][0]['fieldsV1'] == {
        'f:data': {'.': {}, 'f:pw': {}, 'f:user': {}}, 'f:type': {}}
    status, empty = call(kube_client, 'POST', S, {
        'metadata': {'name': 'e'}, 'data': {}})
    assert 'data' not in empty   # Go's omitempty
    status, listed = call(kube_client, 'GET', S)
    # A typed list: no continue, items without apiVersion and kind.
    assert listed['metadata'].keys() == {'resourceVersion'}
    assert 'kind' not in listed['items'][0]


def test_secret_validation_in_kube_words(kube_client):
    status, answer = call(kube_client, 'POST', S, {
        'metadata': {'name': 'b'}, 'data': {'k': 'not base64!'}})
    assert (status, answer['message']) == (400, (
        'Secret in version "v1" cannot be handled as a Secret: illegal '
        'base64 data at input byte 3'))
    status, answer = call(kube_client, 'POST', S, {
        'metadata': {'name': 'k'}, 'data': {'bad key': 'eA=='}})
    assert status == 422
    assert answer['details']['causes'][0]['field'] == 'data[bad key]'
    _, secret = call(kube_client, 'POST', S, {
        'metadata': {'name': 'i'}, 'immutable': True, 'data': {'k': 'eA=='}})
    status, answer = call(kube_client, 'PUT', S + '/i',
                          dict(secret, type='example.com/other',
                               data={'k': 'eQ=='}))
    assert status == 422
    assert answer['message'] == (
        'Secret "i" is invalid: [type: Invalid value: "example.com/other": '
        'field is immutable, data: Forbidden: field is immutable when '
        '`immutable` is set]')


def test_strategic_merge_patch_of_a_secret_merges(kube_client):
    call(kube_client, 'POST', S, {'metadata': {'name': 'p'},
                                  'data': {'a': 'eA=='}})
    status, _headers, data = apitools.raw(
        kube_client, 'PATCH', S + '/p', {'stringData': {'b': 'y'}},
        {'Content-Type': 'application/strategic-merge-patch+json'})
    assert status == 200
    assert b'"b":"eQ=="' in data and b'"a":"eA=="' in data
