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

"""The request hooks of sushy_kubevirt.hooks, through the stock routes."""

from unittest import mock

import pytest
from sushy_tools.emulator import main
from sushy_tools import error

from sushy_kubevirt import config
from sushy_kubevirt import plugin

UUID = '9b2b0fde-5a27-4c5e-9a1b-1b7d0c6f1c11'
URL = '/redfish/v1/Systems/%s' % UUID
CHASSIS = 'f3b0c2a4-1d2e-5f60-8a7b-9c0d1e2f3a4b'


def _driver(extended=True):
    spec = None if extended else [
        'uuid', 'name', 'get_power_state', 'get_boot_device',
        'set_boot_device', 'get_versions', 'get_boot_mode', 'systems']
    systems = mock.MagicMock(spec=spec)
    systems.systems = [UUID]
    systems.uuid.return_value = UUID
    systems.name.return_value = 'vm-0'
    systems.get_power_state.return_value = 'Off'
    systems.get_boot_device.return_value = 'Hdd'
    systems.get_boot_mode.return_value = 'UEFI'
    systems.get_versions.return_value = {}
    systems.seen = []
    systems.set_boot_device.side_effect = (
        lambda ident, target, enabled=None: systems.seen.append(
            (ident, target, enabled)))
    if extended:
        for name in ('get_total_memory', 'get_bios', 'get_processors',
                     'get_simple_storage_collection', 'get_total_cpus',
                     'get_http_boot_uri'):
            getattr(systems, name).side_effect = error.NotSupportedError()
        systems.get_boot_source_override_enabled.return_value = 'Once'
        systems.get_boot_progress.return_value = {'LastState': 'None'}
        systems.metrics_text.return_value = 'x_total 1\n'
    return systems


@pytest.fixture
def client():
    plugin.install()    # hooks main.app (done by the import)
    saved = dict(main.app.config)
    main.app._cache = {}
    main.app.config[config.SYSTEMS_DRIVER_KEY] = 'anything'
    with mock.patch.object(main.Application, 'systems',
                           new_callable=mock.PropertyMock) as prop, \
            mock.patch.object(main.Application, 'indicators',
                              new_callable=mock.PropertyMock) as leds, \
            mock.patch.object(main.Application, 'chassis',
                              new_callable=mock.PropertyMock) as chassis:
        prop.return_value = _driver()
        leds.return_value.get_indicator_state.return_value = 'Lit'
        chassis.return_value.chassis = [CHASSIS]
        chassis.return_value.of_system.return_value = CHASSIS
        yield main.app.test_client(), prop.return_value
    main.app.config.clear()
    main.app.config.update(saved)
    main.app._cache = {}


def _error(response, status):
    assert response.status_code == status, response.data
    return response.get_json()['error']['message']


def test_metrics(client):
    http, _ = client
    response = http.get('/metrics')
    assert response.status_code == 200
    assert response.content_type.startswith('text/plain; version=0.0.4')
    assert response.data.startswith(b'x_total 1\n')
    assert b'\nsushy_kubevirt_security_log_held ' in response.data
    response = http.post('/metrics')
    assert _error(response, 405)
    assert 'GET' in response.headers['Allow']
    assert response.get_json()['error']['code'].endswith(
        '.OperationNotAllowed')


def test_metrics_404_without_the_driver_key(client):
    http, _ = client
    del main.app.config[config.SYSTEMS_DRIVER_KEY]
    assert 'No metrics' in _error(http.get('/metrics'), 404)


def test_get_renders_the_drivers_override(client):
    http, systems = client
    boot = http.get(URL).get_json()['Boot']
    assert boot['BootSourceOverrideEnabled'] == 'Once'
    assert boot['BootSourceOverrideEnabled@Redfish.AllowableValues'] == [
        'Once', 'Continuous', 'Disabled']
    assert boot['BootSourceOverrideTarget'] == 'Hdd'
    systems.get_boot_source_override_enabled.assert_called_once_with(UUID)


def test_get_is_stock_without_the_driver_key(client):
    http, systems = client
    del main.app.config[config.SYSTEMS_DRIVER_KEY]
    boot = http.get(URL).get_json()['Boot']
    assert boot['BootSourceOverrideEnabled'] == 'Continuous'
    systems.get_boot_source_override_enabled.assert_not_called()


def test_patch_passes_enabled_to_set_boot_device(client):
    http, systems = client
    response = http.patch(URL, json={'Boot': {
        'BootSourceOverrideTarget': 'Pxe',
        'BootSourceOverrideEnabled': 'Once'}})
    assert response.status_code == 204
    assert systems.seen == [(UUID, 'Pxe', 'Once')]


def test_patch_without_enabled_keeps_it(client):
    http, systems = client
    http.patch(URL, json={'Boot': {'BootSourceOverrideTarget': 'Cd'}})
    assert systems.seen == [(UUID, 'Cd', None)]


def test_patch_of_enabled_alone_reapplies_current_target(client):
    http, systems = client
    response = http.patch(URL, json={'Boot': {
        'BootSourceOverrideEnabled': 'Continuous'}})
    assert response.status_code == 204
    assert systems.seen == [(UUID, 'Hdd', 'Continuous')]


@pytest.mark.parametrize('body, words', [
    ({'Boot': {'BootSourceOverrideEnabled': 'Sometimes'}},
     'BootSourceOverrideEnabled'),
    ({'Boot': {'BootSourceOverrideTarget': 'Pxe',
               'BootSourceOverrideMode': 'Bios'}}, 'BootSourceOverrideMode'),
    ({'Boot': {'BootSourceOverrideTarget': 'Network'}},
     'BootSourceOverrideTarget'),
    ({'Boot': {'BootSourceOverrideTarget': 'Pxe', 'BootOrder': []}},
     'BootOrder'),
    ({'Boot': 'Pxe'}, 'Boot must be'),
    ({'Name': 'x', 'Boot': {'BootSourceOverrideTarget': 'Pxe'}}, 'Name'),
    ({'Boot': {'BootSourceOverrideTarget': 'Pxe'}, 'IndicatorLED': 'On'},
     'IndicatorLED'),
    ({'Boot': {'BootSourceOverrideTarget': 'Pxe'}, 'IndicatorLED': ''},
     'IndicatorLED'),
    ([1], 'JSON object'),
])
def test_bad_patch_changes_nothing(client, body, words):
    http, systems = client
    assert words in _error(http.patch(URL, json=body), 400)
    systems.set_boot_device.assert_not_called()
    systems.set_boot_mode.assert_not_called()


def test_malformed_json_is_a_redfish_400(client):
    http, systems = client
    response = http.patch(URL, data='{"Boot": ',
                          content_type='application/json')
    assert _error(response, 400)
    systems.set_boot_device.assert_not_called()


def test_other_drivers_keep_the_stock_patch(client):
    http, _ = client
    systems = _driver(extended=False)
    with mock.patch.object(main.Application, 'systems',
                           new_callable=mock.PropertyMock,
                           return_value=systems):
        response = http.patch(URL, json={'Boot': {
            'BootSourceOverrideTarget': 'Pxe',
            'BootSourceOverrideEnabled': 'Sometimes'}})
    assert response.status_code == 204
    assert systems.seen == [(UUID, 'Pxe', None)]


def test_manager_gets_the_service_root_uuid(client):
    http, _ = client
    root = http.get('/redfish/v1/').get_json()['UUID']
    manager = http.get('/redfish/v1/Managers/%s' % UUID).get_json()
    assert manager['ServiceEntryPointUUID'] == root


def test_processor_counts_are_integers(client):
    http, systems = client
    systems.get_processors.side_effect = None
    systems.get_processors.return_value = [{
        'id': 'CPU0', 'Id': 'CPU0', 'socket': 'CPU 0', 'model': 'host',
        'vendor': 'KubeVirt', 'cores': 2, 'threads': 4}]
    body = http.get(URL + '/Processors/CPU0').get_json()
    assert body['TotalCores'] == 2
    assert body['TotalThreads'] == 4


def test_system_health_rollup_is_spelt_as_the_schema(client):
    http, _ = client
    body = http.get(URL).get_json()
    assert body['Status']['HealthRollup'] == 'OK'
    assert 'HealthRollUp' not in body['Status']
