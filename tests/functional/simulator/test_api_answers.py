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

"""Answers kube-apiserver gives that the differential corpus found
(tests/differential): messages, deletes, decoding."""

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest
from tests.functional.simulator import apitools

call = apitools.call
W = '/apis/sim.example.com/v1/namespaces/default/widgets'
pytestmark = pytest.mark.simulator(install=False)


@pytest.mark.parametrize('query, code, message', [
    ({'labelSelector': 'tier=('}, 400,
     "unable to parse requirement: found '(', expected: identifier"),
    ({'limit': 'x'}, 400, 'strconv.ParseInt: parsing "x": invalid syntax'),
    ({'timeoutSeconds': 'x'}, 400,
     'strconv.ParseInt: parsing "x": invalid syntax'),
    ({'resourceVersion': 'abc'}, 400,
     'invalid resource version: resourceVersion: Invalid value: "abc": '
     'strconv.ParseUint: parsing "abc": invalid syntax'),
    ({'resourceVersion': 'abc', 'watch': 'true'}, 500,
     'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing '
     '"abc": invalid syntax')])
def test_malformed_list_and_watch_options(kube_client, query, code,
                                          message):
    status, answer = call(kube_client, 'GET', W, **query)
    assert (status, answer['message']) == (code, message)
    assert ('reason' in answer) == (code != 500)


def test_kind_mismatch_of_a_custom_resource_is_422(kube_client):
    status, answer = call(kube_client, 'POST', W, dict(
        apitools.widget('w'), kind='Gadget'))
    assert status == 422
    assert answer['message'] == ('Gadget.sim.example.com "w" is invalid: '
                                 'kind: Invalid value: "Gadget": must be '
                                 'Widget')


def test_delete_preconditions_name_the_kind(kube_client):
    call(kube_client, 'POST', W, apitools.widget('w'))
    status, answer = call(kube_client, 'DELETE', W + '/w',
                          {'preconditions': {'uid': 'x'}})
    assert status == 409
    assert answer['message'].startswith(
        'Operation cannot be fulfilled on Widget.sim.example.com "w": the '
        'UID in the precondition (x) does not match the UID in record')
    assert answer['message'].endswith(
        'The object might have been deleted and then recreated')
    assert answer['details']['kind'] == 'Widget'


def test_delete_collection_answers_the_deleted_list(kube_client):
    call(kube_client, 'POST', W, apitools.widget('a', labels={'x': '1'}))
    call(kube_client, 'POST', W, apitools.widget('b', labels={'x': '2'}))
    status, answer = call(kube_client, 'DELETE', W, labelSelector='x=1')
    assert status == 200 and answer['kind'] == 'WidgetList'
    assert [o['metadata']['name'] for o in answer['items']] == ['a']


def test_removing_the_last_finalizer_answers_the_update(kube_client):
    held = apitools.widget('h')
    held['metadata']['finalizers'] = ['example.com/hold']
    _, created = call(kube_client, 'POST', W, held)
    _, deleting = call(kube_client, 'DELETE', W + '/h')
    assert deleting['metadata']['generation'] == 2
    status, answer = call(kube_client, 'PATCH', W + '/h',
                          {'metadata': {'finalizers': None}})
    assert status == 200 and 'finalizers' not in answer['metadata']
    assert answer['metadata']['resourceVersion'] == \
        deleting['metadata']['resourceVersion']
    assert call(kube_client, 'GET', W + '/h')[0] == 404


def _post_text(simulator, text, **query):
    req = urllib.request.Request(
        simulator.url + W + '?' + urllib.parse.urlencode(query),
        data=text.encode(), method='POST', headers={
            'Authorization': 'Bearer ' + simulator.token,
            'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(
                req, timeout=5,
                context=apitools.tls_context(simulator)) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def test_duplicate_and_unknown_metadata_fields(kube_client, simulator):
    body = ('{"apiVersion": "sim.example.com/v1", "kind": "Widget", '
            '"metadata": {"name": "d"}, "spec": {"a": 1, "a": 2}}')
    status, _headers, data = _post_text(simulator, body,
                                        fieldValidation='Strict')
    assert status == 400
    assert json.loads(data)['message'].endswith(
        'strict decoding error: duplicate field "spec.a"')
    status, headers, _data = _post_text(simulator, body)
    assert status == 201
    assert headers.get_all('Warning') == [
        '299 - "duplicate field \\"spec.a\\""']
    status, answer = call(kube_client, 'POST', W, dict(
        apitools.widget('m'), metadata={'name': 'm', 'bogus': 1}),
        fieldValidation='Strict')
    assert (status, answer['message']) == (400, (
        'Widget in version "v1" cannot be handled as a Widget: strict '
        'decoding error: unknown field "metadata.bogus"'))
