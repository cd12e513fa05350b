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

"""Truthful answers: AllowableValues are accepted, errors name MessageIds.

Every value a System lists in ``@Redfish.AllowableValues`` is accepted in
a state where it applies, and the values that can never work are not
listed. Every 4xx is a Redfish error whose ``error.code`` and
``@Message.ExtendedInfo`` carry a Base registry MessageId; a 405 names
the allowed methods; no error body is plain text.
"""

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.vmedia.conftest import images  # noqa: F401

RESET = '/Actions/ComputerSystem.Reset'
#: Reset types that apply to a System that is On (the others to Off).
FROM_ON = ('ForceOff', 'GracefulShutdown', 'GracefulRestart',
           'ForceRestart', 'PushPowerButton')


def _system(emulator, machine):
    return requests.get(emulator.url + machine.path, timeout=30).json()


def _power(emulator, machine, state):
    harness.wait_until(
        lambda: _system(emulator, machine)['PowerState'] == state,
        what='PowerState %s' % state)


def _redfish_error(response, status, message_id):
    assert response.status_code == status, response.text
    assert response.headers['Content-Type'].startswith('application/json')
    error = response.json()['error']
    assert error['code'] == 'Base.1.16.' + message_id, error
    assert [m['MessageId'] for m in error['@Message.ExtendedInfo']] == [
        error['code']]
    return error


def test_reset_types_listed_are_exactly_those_accepted(emulator, machines):
    allowed = _system(emulator, machines())['Actions'][
        '#ComputerSystem.Reset']['ResetType@Redfish.AllowableValues']
    assert 'Nmi' not in allowed and 'PushPowerButton' in allowed
    for reset_type in allowed:
        machine = machines()
        url = emulator.url + machine.path + RESET
        if reset_type in FROM_ON:
            assert requests.post(url, json={'ResetType': 'On'},
                                 timeout=30).status_code == 204
            _power(emulator, machine, 'On')
        response = requests.post(url, json={'ResetType': reset_type},
                                 timeout=30)
        assert response.status_code == 204, (reset_type, response.text)
    response = requests.post(url, json={'ResetType': 'Nmi'}, timeout=30)
    _redfish_error(response, 400, 'ActionParameterNotSupported')


@pytest.mark.parametrize('mode', ['UEFI', 'Legacy'])
def test_boot_targets_listed_are_exactly_those_accepted(
        emulator, machine, images, mode):  # noqa: F811
    url = emulator.url + machine.path
    assert requests.patch(url, json={'Boot': {
        'BootSourceOverrideMode': mode}}, timeout=30).status_code == 204
    boot = _system(emulator, machine)['Boot']
    targets = boot['BootSourceOverrideTarget@Redfish.AllowableValues']
    assert ('UefiHttp' in targets) == (mode == 'UEFI')
    # Cd with no media inserted too (the boot falls through).
    assert 'Cd' in targets
    for inserted in (False, True):
        if inserted:
            assert requests.post(
                url + '/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia',
                json={'Image': images.add('boot-%s.iso' % mode)},
                timeout=30).status_code == 204
        for target in targets:
            for enabled in boot['BootSourceOverrideEnabled@Redfish.'
                                'AllowableValues']:
                body = {'BootSourceOverrideTarget': target,
                        'BootSourceOverrideEnabled': enabled}
                if enabled == 'Disabled':   # cancels: the target stays
                    del body['BootSourceOverrideTarget']
                response = requests.patch(url, json={'Boot': body},
                                          timeout=30)
                assert response.status_code == 204, (inserted, body,
                                                     response.text)
    if mode == 'Legacy':
        response = requests.patch(url, json={'Boot': {
            'BootSourceOverrideTarget': 'UefiHttp'}}, timeout=30)
        error = _redfish_error(response, 400, 'PropertyValueNotInList')
        assert 'UefiHttp' not in error['message'].partition(
            'is not one of')[2], error['message']


def test_every_4xx_names_a_base_registry_message(emulator, machine):
    url = emulator.url + machine.path
    chassis = requests.get(emulator.url + '/redfish/v1/Chassis',
                           timeout=30).json()['Members'][0]['@odata.id']
    cases = [
        ('PATCH', url, b'{not json', 400, 'MalformedJSON'),
        ('PATCH', url, {'Name': 'x'}, 400, 'PropertyUnknown'),
        ('PATCH', url, {'Boot': {'BootSourceOverrideTarget': 'Floppy'}},
         400, 'PropertyValueNotInList'),
        ('PATCH', url, {'IndicatorLED': 'Purple'}, 400,
         'PropertyValueNotInList'),
        ('POST', url + RESET, {}, 400, 'ActionParameterMissing'),
        ('POST', url + RESET, {'ResetType': 'Explode'}, 400,
         'ActionParameterValueNotInList'),
        ('PATCH', url + '/SecureBoot', {'SecureBootEnable': 'yes'}, 400,
         'PropertyValueTypeError'),
        ('GET', emulator.url + '/redfish/v1/Systems/no-such', None, 404,
         'ResourceNotFound'),
        ('GET', url + '/Memory/DIMM9', None, 404, 'ResourceNotFound'),
        ('GET', emulator.url + '/redfish/v1/TaskService/Tasks/42', None,
         404, 'ResourceNotFound'),
        ('POST', emulator.url + '/redfish/v1/UpdateService/Actions/'
         'UpdateService.SimpleUpdate', {}, 400, 'ActionParameterMissing'),
        ('DELETE', url, None, 405, 'OperationNotAllowed'),
        ('PATCH', emulator.url + chassis, {'Foo': 1}, 400,
         'PropertyUnknown'),
        ('PATCH', emulator.url + chassis, {}, 400, 'PropertyMissing'),
    ]
    for method, target, body, status, message_id in cases:
        kwargs = {'data': body} if isinstance(body, bytes) else {'json': body}
        response = requests.request(method, target, timeout=30,
                                    headers={'Content-Type':
                                             'application/json'}, **kwargs)
        _redfish_error(response, status, message_id)
        if status == 405:
            assert 'GET' in response.headers['Allow']
        assert response.headers['OData-Version'] == '4.0'


def test_the_service_root_links_what_is_served(emulator):
    root = requests.get(emulator.url + '/redfish/v1/', timeout=30)
    assert root.headers['OData-Version'] == '4.0'
    body = root.json()
    assert '@Redfish.Copyright' not in body
    assert body['UpdateService'] == {'@odata.id': '/redfish/v1/UpdateService'}
    assert body['Tasks'] == {'@odata.id': '/redfish/v1/TaskService'}
    for link in ('UpdateService', 'Tasks'):
        assert requests.get(emulator.url + body[link]['@odata.id'],
                            timeout=30).status_code == 200
    assert body['Links']['Sessions'] == {
        '@odata.id': '/redfish/v1/SessionService/Sessions'}


def test_no_plain_text_or_500_in_other_feature_sets(sim, tmp_path):
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kc')),
        SUSHY_EMULATOR_FEATURE_SET='vmedia')
    with harness.InProcess(config) as server:
        manager = requests.get(server.url + '/redfish/v1/Managers',
                               timeout=30).json()['Members'][0]['@odata.id']
        response = requests.patch(server.url + manager, json={}, timeout=30)
        _redfish_error(response, 405, 'OperationNotAllowed')
        assert response.headers['Allow'] == 'GET, HEAD'


def test_cd_set_before_media_boots_it_once_inserted(
        sim, emulator, machine, images):  # noqa: F811
    url = emulator.url + machine.path
    response = requests.patch(url, json={'Boot': {
        'BootSourceOverrideTarget': 'Cd',
        'BootSourceOverrideEnabled': 'Continuous'}}, timeout=30)
    assert response.status_code == 204, response.text
    assert requests.post(url + '/VirtualMedia/Cd/Actions/VirtualMedia.'
                         'InsertMedia', json={'Image': images.add(
                             'later.iso')}, timeout=30).status_code == 204
    devices = harness.vm(sim, machine.name)['spec']['template']['spec'][
        'domain']['devices']
    first = min((d for d in devices['disks'] + devices['interfaces']
                 if d.get('bootOrder')), key=lambda d: d['bootOrder'])
    assert 'cdrom' in first, devices
    assert _system(emulator, machine)['Boot'][
        'BootSourceOverrideTarget'] == 'Cd'
    assert requests.post(url + '/VirtualMedia/Cd/Actions/VirtualMedia.'
                         'EjectMedia', json={}, timeout=30
                         ).status_code == 204
    # As sushy-tools' libvirt driver: an eject resets a Cd boot to Hdd.
    assert _system(emulator, machine)['Boot'][
        'BootSourceOverrideTarget'] == 'Hdd'
