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

"""The ``lose_answer`` fault: the write is applied, its answer lost."""

from kubernetes import client
import pytest
import requests
from tests.functional.simulator import apitools
import urllib3

pytestmark = pytest.mark.simulator(install=False)


def _names(custom):
    found = custom.list_namespaced_custom_object(
        apitools.GROUP, apitools.VERSION, 'default', apitools.PLURAL)
    return [o['metadata']['name'] for o in found['items']]


def test_a_cut_answer_leaves_the_write_applied(simulator, custom):
    rule = simulator.faults.lose_answer(method='POST', path='/widgets$')
    with pytest.raises(urllib3.exceptions.HTTPError):
        # A POST is not retried: the client only sees the connection go.
        apitools.create(custom, 'a')
    assert rule.hits == 1 and simulator.faults.rules() == []
    assert _names(custom) == ['a']
    [entry] = simulator.request_log.entries(method='POST')
    assert (entry['status'], entry['error']) == (201, 'answer lost (fault)')
    apitools.create(custom, 'b')    # one-shot
    assert _names(custom) == ['a', 'b']


def test_a_status_instead_of_the_answer(simulator, custom):
    simulator.faults.lose_answer(504, method='POST', path='/widgets$')
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'a')
    assert exc.value.status == 504
    assert apitools.body(exc.value)['reason'] == 'Timeout'
    assert _names(custom) == ['a']


def test_a_refused_request_does_not_take_the_rule(simulator, custom):
    apitools.create(custom, 'a')
    rule = simulator.faults.lose_answer(504, method='POST')
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'a')    # 409 AlreadyExists: not applied
    assert exc.value.status == 409
    assert rule.hits == 0 and simulator.faults.rules() == [rule]


@pytest.mark.parametrize('body, message', [
    ({'action': 'lose_answer', 'code': 200}, 'error status'),
    ({'action': 'lose_answer', 'message': 5}, 'message must be a string'),
])
def test_bad_lose_answer_rules_are_400(simulator, body, message):
    url = simulator.start_control()
    answer = requests.post(url + '/faults', json=body, timeout=10,
                           headers={'Authorization': 'Bearer '
                                    + simulator.token})
    assert answer.status_code == 400
    assert message in answer.json()['error']
    assert simulator.faults.rules() == []


def test_the_control_api_arms_it(simulator, custom):
    url = simulator.start_control()
    answer = requests.post(url + '/faults', timeout=10, json={
        'action': 'lose_answer', 'code': 503, 'method': 'POST'},
        headers={'Authorization': 'Bearer ' + simulator.token})
    assert answer.status_code == 201, answer.text
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'a')
    assert exc.value.status == 503
    assert _names(custom) == ['a']
