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

"""The EventService over HTTP, in one process: CRUD, events, filters."""

import base64
import json

import pytest
import requests
import sushy
from tests.functional.emulator import harness
from tests.functional.events import conftest

from sushy_kubevirt.events import subscriptions

SUBS = conftest.SUBSCRIPTIONS


@pytest.fixture(scope='module')
def emulator(config_file):
    with harness.InProcess(config_file) as server:
        conftest.wait_leader([server.url])
        yield server


@pytest.fixture(autouse=True)
def no_subscriptions(emulator):
    yield
    for member in requests.get(emulator.url + SUBS).json()['Members']:
        requests.delete(emulator.url + member['@odata.id'])


def _secret(sim, sub_id):
    rt = sim.store.resource('', 'secrets')
    return sim.store.try_get(rt, 'default',
                             subscriptions.NAME_PREFIX + sub_id)


def test_service_root_and_event_service(emulator):
    root = requests.get(emulator.url + '/redfish/v1/').json()
    assert root['EventService'] == {'@odata.id': '/redfish/v1/EventService'}
    service = requests.get(emulator.url + '/redfish/v1/EventService').json()
    assert service['ServiceEnabled'] is True
    assert service['DeliveryRetryAttempts'] == 2
    assert service['DeliveryRetryIntervalSeconds'] == 0
    assert service['EventFormatTypes'] == ['Event']
    assert service['RegistryPrefixes'] == ['ResourceEvent']
    assert requests.get(emulator.url + service['Subscriptions'][
        '@odata.id']).status_code == 200
    target = service['Actions']['#EventService.SubmitTestEvent']['target']
    assert requests.post(emulator.url + target, json={}).status_code == 400


def test_crud_keeps_headers_secret(sim, emulator, receiver):
    answer = conftest.subscribe(
        emulator.url, receiver.url,
        HttpHeaders=[{'X-Token': 'hush-hush'}])
    sub_id = answer.json()['Id']
    location = answer.headers['Location']
    assert location.endswith(SUBS + '/' + sub_id)
    got = requests.get(emulator.url + SUBS + '/' + sub_id).json()
    assert got['Destination'] == receiver.url
    assert got['Context'] == 'ctx'
    assert got['HttpHeaders'] == []
    assert 'hush-hush' not in json.dumps(got)
    secret = _secret(sim, sub_id)
    stored = json.loads(base64.b64decode(secret['data']['headers']))
    assert stored == [['X-Token', 'hush-hush']]
    listed = requests.get(emulator.url + SUBS).json()
    assert [m['@odata.id'] for m in listed['Members']] == [
        SUBS + '/' + sub_id]
    # The header is sent with each event.
    requests.post(emulator.url + '/redfish/v1/EventService/Actions/'
                  'EventService.SubmitTestEvent',
                  json={'MessageId': 'ResourceEvent.1.4.2.ResourceChanged',
                        'OriginOfCondition': '/redfish/v1/Systems'})
    receiver.wait(lambda r: r.posts)
    assert receiver.posts[0][1]['X-Token'] == 'hush-hush'
    assert receiver.posts[0][2]['Context'] == 'ctx'
    assert requests.delete(emulator.url + SUBS + '/' + sub_id
                           ).status_code == 204
    assert _secret(sim, sub_id) is None
    assert requests.get(emulator.url + SUBS + '/' + sub_id
                        ).status_code == 404
    assert requests.delete(emulator.url + SUBS + '/' + sub_id
                           ).status_code == 404


@pytest.mark.parametrize('body, message, prop', [
    ({}, 'PropertyMissing', 'Destination'),
    ({'Destination': 'ftp://127.0.0.1/x'}, 'PropertyValueFormatError',
     'Destination'),
    ({'Destination': 'http://169.254.169.254/latest'},
     'PropertyValueFormatError', 'Destination'),
    ({'Destination': 'http://u:p@127.0.0.1/x'}, 'PropertyValueFormatError',
     'Destination'),
    ({'Destination': 'http://127.0.0.1/x', 'Protocol': 'SNMPv2c'},
     'PropertyValueNotInList', 'Protocol'),
    ({'Destination': 'http://127.0.0.1/x', 'EventFormatType':
      'MetricReport'}, 'PropertyValueNotInList', 'EventFormatType'),
    ({'Destination': 'http://127.0.0.1/x', 'RegistryPrefixes': ['Base']},
     'PropertyValueNotInList', 'RegistryPrefixes'),
    ({'Destination': 'http://127.0.0.1/x', 'ResourceTypes': 'Chassis'},
     'PropertyValueTypeError', 'ResourceTypes'),
    ({'Destination': 'http://127.0.0.1/x', 'HttpHeaders': [
        {'Bad Name': 'v'}]}, 'PropertyValueFormatError', 'HttpHeaders'),
    ({'Destination': 'http://127.0.0.1/x', 'DeliveryRetryPolicy':
      'TerminateAfterRetries'}, 'PropertyUnknown', 'DeliveryRetryPolicy'),
] + [
    # Framing and hop-by-hop headers: the service's own, never a client's.
    ({'Destination': 'http://127.0.0.1/x', 'HttpHeaders': [{name: value}]},
     'PropertyValueFormatError', 'HttpHeaders')
    for name, value in [
        ('Host', 'internal.example'), ('Content-Length', '0'),
        ('transfer-encoding', 'chunked'), ('Connection', 'close'),
        ('Upgrade', 'h2c'), ('TE', 'trailers'), ('Trailer', 'X-A'),
        ('Proxy-Authorization', 'Basic eDp5'), ('Keep-Alive', '5'),
        ('Content-Type', 'text/plain')]
] + [
    ({'Destination': 'http://127.0.0.1/x', 'HttpHeaders': [
        {'X-Big': 'v' * 200000}]}, 'StringValueTooLong', 'HttpHeaders'),
    ({'Destination': 'http://127.0.0.1/x', 'HttpHeaders': [
        {'X-' + 'n' * 100: 'v'}]}, 'StringValueTooLong', 'HttpHeaders'),
    ({'Destination': 'http://127.0.0.1/x', 'HttpHeaders': [
        {'X-H%d' % n: 'v' for n in range(40)}]}, 'ArraySizeTooLong',
     'HttpHeaders'),
    ({'Destination': 'http://127.0.0.1/x', 'HttpHeaders': [
        {'X-Token': 'a'}, {'x-token': 'b'}]}, 'PropertyValueFormatError',
     'HttpHeaders'),
])
def test_bad_subscription_is_a_400_and_creates_nothing(
        sim, emulator, body, message, prop):
    answer = requests.post(emulator.url + SUBS, json=body)
    assert answer.status_code == 400, answer.text
    info = answer.json()['error']['@Message.ExtendedInfo'][0]
    assert info['MessageId'].endswith('.' + message)
    assert info['RelatedProperties'] == ['/' + prop]
    for headers in body.get('HttpHeaders', []):  # values never echoed
        assert all(v not in answer.text for v in headers.values()
                   if len(v) > 2)
    assert requests.get(emulator.url + SUBS).json()['Members'] == []


def test_reset_and_external_edit_each_give_one_event(sim, emulator,
                                                     receiver):
    conftest.subscribe(emulator.url, receiver.url)
    path = conftest.system_path(sim, 'vm-00000')
    conftest.reset(emulator.url, path, 'On')
    receiver.wait(lambda r: r.matching(path, 'ResourcePoweredOn'))
    conftest.reset(emulator.url, path, 'ForceOff')
    receiver.wait(lambda r: r.matching(path, 'ResourcePoweredOff'))
    conftest.edit_cores(sim, 'vm-00000', 3)
    receiver.wait(lambda r: r.matching(path, 'ResourceChanged'))
    # A marker event after both: everything before it has arrived.
    conftest.edit_cores(sim, 'vm-00001', 3)
    receiver.wait(lambda r: r.matching(
        conftest.system_path(sim, 'vm-00001'), 'ResourceChanged'))
    seen = [(e['EventId'], e['MessageId'].rpartition('.')[2],
             e['OriginOfCondition']['@odata.id'][-6:])
            for e in receiver.events()]
    assert len(receiver.matching(path, 'ResourcePoweredOff')) == 1, seen
    assert len(receiver.matching(path, 'ResourcePoweredOn')) == 1, seen
    assert len(receiver.matching(path, 'ResourcePoweringOn')) == 1, seen
    assert len(receiver.matching(path, 'ResourceChanged')) == 1
    event = receiver.matching(path, 'ResourcePoweredOff')[0]
    assert event['MessageArgs'] == [path.rpartition('/')[2]]
    assert event['Message'].endswith('has powered off.')
    ids = [e['EventId'] for e in receiver.events()]
    assert len(ids) == len(set(ids))
    body = receiver.posts[0][2]
    assert body['@odata.type'].startswith('#Event.')
    assert body['Context'] == 'ctx'


def test_filters(sim, emulator, receiver):
    path = conftest.system_path(sim, 'vm-00002')
    other = conftest.system_path(sim, 'vm-00003')
    conftest.subscribe(emulator.url, receiver.url, ResourceTypes=[
        'ComputerSystem'], OriginResources=[{'@odata.id': path}])
    conftest.edit_cores(sim, 'vm-00003', 5)
    conftest.edit_cores(sim, 'vm-00002', 5)
    receiver.wait(lambda r: r.matching(path, 'ResourceChanged'))
    assert receiver.matching(other) == []


def test_subscription_and_test_event_with_sushy(emulator, receiver):
    client = sushy.Sushy(emulator.url + '/redfish/v1/',
                         auth=harness.NoAuth(), server_side_retries=0)
    service = client.get_event_service()
    assert service.service_enabled is True
    # What Ironic's redfish vendor passthru create_subscription sends.
    created = service.subscriptions.create({
        'Destination': receiver.url, 'Protocol': 'Redfish',
        'Context': 'ironic', 'EventTypes': ['Alert']})
    assert created.destination == receiver.url
    assert created.context == 'ironic'
    assert created.event_types == ['Alert']
    members = service.subscriptions.get_members()
    assert [m.identity for m in members] == [created.identity]
    service.submit_test_event(
        'test-1', '2026-01-01T00:00:00Z', 'Alert', 'Hello', ['a'],
        'ResourceEvent.1.4.2.ResourceChanged', '/redfish/v1/Systems', 'OK')
    event, = receiver.wait(lambda r: r.events())
    assert event['EventId'] == 'test-1'
    assert event['MessageArgs'] == ['a']
    assert receiver.posts[0][2]['Context'] == 'ironic'
    created.delete()
    assert service.subscriptions.get_members() == []


def test_the_api_server_is_no_destination(sim, emulator):
    answer = requests.post(emulator.url + SUBS, json={
        'Destination': sim.url + '/api/v1/namespaces'})
    assert answer.status_code == 400, answer.text
    info = answer.json()['error']['@Message.ExtendedInfo'][0]
    assert info['MessageId'].endswith('.PropertyValueFormatError')
    assert 'Kubernetes API server' in answer.json()['error']['message']
    assert requests.get(emulator.url + SUBS).json()['Members'] == []
