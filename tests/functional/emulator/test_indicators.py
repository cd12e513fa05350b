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

"""IndicatorLED over real HTTP: kept on the VM, shared, no local store."""

import os

import pytest
import requests
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import indicator

STORE = 'indicators.sqlite'


@pytest.fixture(scope='module')
def state_dirs(tmp_path_factory):
    return [tmp_path_factory.mktemp('state') for _ in range(2)]


def _config(sim, tmp, state_dir):
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    return harness.write_config(tmp / 'emulator.conf', kubeconfig,
                                SUSHY_EMULATOR_STATE_DIR=str(state_dir))


@pytest.fixture(scope='module')
def leds(sim, state_dirs, tmp_path_factory):
    config = _config(sim, tmp_path_factory.mktemp('leds'), state_dirs[0])
    with harness.InProcess(config) as server:
        yield server.wait_synced(20)


def _led(url):
    response = requests.get(url)
    assert response.status_code == 200, response.text
    return response.json().get('IndicatorLED')


def _annotation(sim, machine):
    return harness.vm(sim, machine.name)['metadata'].get(
        'annotations', {}).get(indicator.ANNOTATION)


def test_led_is_kept_on_the_vm(sim, leds, machine, state_dirs, tmp_path):
    url = leds.url + machine.path
    assert _led(url) == 'Lit'
    assert _annotation(sim, machine) is None  # reading writes nothing

    sim.request_log.clear()
    response = requests.patch(url, json={'IndicatorLED': 'Blinking'})
    assert response.status_code == 204, response.text
    assert [e['verb'] for e in harness.api_calls(sim)] == ['patch']
    assert _annotation(sim, machine) == 'Blinking'
    assert _led(url) == 'Blinking'  # the patched VM is in the cache

    sim.request_log.clear()
    for _ in range(10):
        assert _led(url) == 'Blinking'
    assert harness.api_calls(sim) == []

    # Another emulator (own state dir, own cache) reads it from the VM.
    config = _config(sim, tmp_path, state_dirs[1])
    other = harness.emulator_process('sushy-emulator', config, tmp_path)
    try:
        other.start().wait_ready()
        assert _led(other.url + machine.path) == 'Blinking'
    finally:
        other.stop()
    for state_dir in state_dirs:
        assert STORE not in os.listdir(state_dir)


@pytest.mark.parametrize('body', [
    {'IndicatorLED': 'On'},
    {'IndicatorLED': 'blinking'},
    {'IndicatorLED': ['Off']},
    {'IndicatorLED': 'Off', 'Boot': {'BootSourceOverrideTarget': 'Nope'}},
    {'IndicatorLED': 'Unknown', 'Boot': {'BootSourceOverrideTarget': 'Pxe'}},
])
def test_bad_value_is_a_400_and_changes_nothing(sim, leds, machine, body):
    url = leds.url + machine.path
    before = harness.vm(sim, machine.name)
    sim.request_log.clear()
    response = requests.patch(url, json=body)
    assert response.status_code == 400, response.text
    assert response.json()['error']['message']
    assert [e for e in harness.api_calls(sim) if e['verb'] != 'get'] == []
    assert harness.vm(sim, machine.name) == before
    assert _led(url) == 'Lit'


def test_chassis_led_keeps_the_stock_store(leds, state_dirs):
    chassis = requests.get(leds.url + '/redfish/v1/Chassis').json()
    url = leds.url + chassis['Members'][0]['@odata.id']
    assert _led(url) == 'Lit'
    response = requests.patch(url, json={'IndicatorLED': 'Off'})
    assert response.status_code == 204, response.text
    assert _led(url) == 'Off'
    response = requests.patch(url, json={'IndicatorLED': 'Dim'})
    assert response.status_code == 400, response.text
    assert _led(url) == 'Off'
    assert STORE in os.listdir(state_dirs[0])
