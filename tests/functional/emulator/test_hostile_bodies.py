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

"""Malformed bodies on the System routes: a clear 4xx, nothing changed."""

import json

import pytest
import requests
from tests.functional.emulator import harness

RESET = '/Actions/ComputerSystem.Reset'
NOT_OBJECTS = ('[]', 'null', '"On"', '1', '{"Boot": ', '\xff')


def _refused(response, status, message_id):
    assert response.status_code == status, response.text
    assert response.headers['Content-Type'].startswith('application/json')
    error = response.json()['error']
    assert error['code'].endswith('.' + message_id), error
    info = error['@Message.ExtendedInfo'][0]
    assert info['MessageId'] == error['code']
    assert info['Message'] and error['message']
    return error


@pytest.fixture(scope='module')
def target(machines):
    return machines()


@pytest.fixture
def unchanged(sim, target):
    before = harness.vm(sim, target.name)
    yield target
    after = harness.vm(sim, target.name)
    assert after['metadata']['resourceVersion'] == \
        before['metadata']['resourceVersion']


def _send(method, url, data):
    return requests.request(method, url, data=data.encode('utf-8', 'replace'),
                            headers={'Content-Type': 'application/json'})


@pytest.mark.parametrize('data', NOT_OBJECTS)
@pytest.mark.parametrize('method, suffix', [
    ('POST', RESET), ('PATCH', ''), ('PATCH', '/SecureBoot')])
def test_a_body_that_is_no_object_is_malformed_json(
        emulator, unchanged, method, suffix, data):
    url = emulator.url + unchanged.path + suffix
    _refused(_send(method, url, data), 400, 'MalformedJSON')


@pytest.mark.parametrize('body, status, message_id', [
    ({'ResetType': 'On', 'Extra': 1}, 400, 'ActionParameterUnknown'),
    ({}, 400, 'ActionParameterMissing'),
    ({'ResetType': 1}, 400, 'ActionParameterValueTypeError'),
    ({'ResetType': None}, 400, 'ActionParameterValueTypeError'),
])
def test_reset_parameters_are_checked(emulator, unchanged, body, status,
                                      message_id):
    error = _refused(requests.post(emulator.url + unchanged.path + RESET,
                                   json=body), status, message_id)
    assert error['@Message.ExtendedInfo'][0]['RelatedProperties']


@pytest.mark.parametrize('body, message_id', [
    ({'SecureBootEnable': 'yes'}, 'PropertyValueTypeError'),
    ({'SecureBootEnable': True, 'SecureBootMode': 'SetupMode'},
     'PropertyUnknown'),
    ({}, 'PropertyMissing'),
])
def test_secure_boot_patch_is_checked(emulator, unchanged, body, message_id):
    _refused(requests.patch(emulator.url + unchanged.path + '/SecureBoot',
                            json=body), 400, message_id)


@pytest.mark.parametrize('body, message_id', [
    ({'Boot': {'BootSourceOverrideTarget': 'Network'}},
     'PropertyValueNotInList'),
    ({'Boot': 'Pxe'}, 'PropertyValueTypeError'),
    ({'Name': 'x'}, 'PropertyUnknown'),
    ({'Boot': {'HttpBootUri': 7}}, 'PropertyValueTypeError'),
    ({'Boot': {}}, 'PropertyMissing'),
])
def test_system_patch_is_checked(emulator, unchanged, body, message_id):
    _refused(requests.patch(emulator.url + unchanged.path, json=body), 400,
             message_id)


def test_a_body_over_1_mib_is_413(emulator, unchanged):
    body = json.dumps({'ResetType': 'On', 'Pad': 'x' * (1024 * 1024)})
    response = _send('POST', emulator.url + unchanged.path + RESET, body)
    assert response.status_code == 413
    assert response.json()['error']['message']


def test_unknown_urls_and_methods_answer_redfish_errors(emulator, target):
    _refused(requests.get(emulator.url + '/redfish/v1/Nowhere'), 404,
             'ResourceNotFound')
    response = requests.delete(emulator.url + target.path)
    _refused(response, 405, 'OperationNotAllowed')
    assert set(response.headers['Allow'].split(', ')) >= {'GET', 'PATCH'}


def test_image_credentials_never_reach_the_log(emulator, target, caplog):
    cd = emulator.url + target.path + '/VirtualMedia/Cd'
    caplog.set_level('DEBUG')
    response = requests.post(
        cd + '/Actions/VirtualMedia.InsertMedia',
        json={'Image': 'http://someone:s3cr3t@127.0.0.1:9/x.iso'})
    assert response.status_code == 204, response.text
    try:
        assert 'x.iso' in caplog.text
        assert 's3cr3t' not in caplog.text
        assert 'someone' not in caplog.text
    finally:
        assert requests.post(cd + '/Actions/VirtualMedia.EjectMedia',
                             json={}).status_code == 204
