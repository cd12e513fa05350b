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

"""BIOS over HTTP: schema URIs, registry, pending settings, validation."""

import json

import pytest
import requests
import sushy
from tests.functional.emulator import harness


def _url(emulator, machine, sub=''):
    return emulator.url + machine.path + '/Bios' + sub


def _reset(emulator, machine, reset_type):
    response = requests.post(
        emulator.url + machine.path + '/Actions/ComputerSystem.Reset',
        json={'ResetType': reset_type}, timeout=10)
    assert response.status_code == 204, response.text


def _power(emulator, machine, state):
    harness.wait_until(lambda: requests.get(
        emulator.url + machine.path, timeout=10).json()['PowerState']
        == state, 20, what=state)


def test_links_and_redirects(emulator, machine):
    system = requests.get(emulator.url + machine.path, timeout=10).json()
    assert system['Bios'] == {'@odata.id': machine.path + '/Bios'}
    bios = requests.get(_url(emulator, machine), timeout=10).json()
    assert bios['@Redfish.Settings']['SettingsObject'] == {
        '@odata.id': machine.path + '/Bios/Settings'}
    old = emulator.url + machine.path + '/BIOS/Settings'
    response = requests.get(old, allow_redirects=False, timeout=10)
    assert response.status_code == 308
    assert response.headers['Location'].endswith(
        machine.path + '/Bios/Settings')
    response = requests.patch(old, json={'Attributes': {
        'ProcTurboMode': 'Disabled'}}, timeout=10)
    assert response.status_code == 204, 'PATCH follows the 308'


def test_registry_resolves_with_sushy(redfish, machine):
    system_bios = redfish.get_system(machine.path).bios
    registry = system_bios.get_attribute_registry()
    assert registry is not None, 'the AttributeRegistry resolves'
    entries = {a.name: a for a in registry.registry_entries.attributes}
    assert entries['ProcTurboMode'].allowable_values == [
        {'ValueName': 'Enabled', 'ValueDisplayName': 'Enabled'},
        {'ValueName': 'Disabled', 'ValueDisplayName': 'Disabled'}]
    assert entries['NumCores'].read_only is True
    assert entries['NumCores'].attribute_type == 'Integer'
    assert set(entries) == set(system_bios.attributes)


def test_settings_apply_at_next_boot(sim, emulator, machine, redfish):
    system_bios = redfish.get_system(machine.path).bios
    assert system_bios.supported_apply_times == [sushy.APPLY_TIME_ON_RESET]
    system_bios.set_attributes({'ProcTurboMode': 'Disabled',
                                'QuietBoot': False},
                               apply_time=sushy.APPLY_TIME_ON_RESET)
    current = requests.get(_url(emulator, machine), timeout=10).json()
    pending = requests.get(_url(emulator, machine, '/Settings'),
                           timeout=10).json()
    assert current['Attributes']['ProcTurboMode'] == 'Enabled'
    assert pending['Attributes']['ProcTurboMode'] == 'Disabled'
    assert pending['Attributes']['QuietBoot'] is False
    _reset(emulator, machine, 'On')
    _power(emulator, machine, 'On')
    current = requests.get(_url(emulator, machine), timeout=10).json()
    assert current['Attributes']['ProcTurboMode'] == 'Disabled'
    assert current['Attributes']['QuietBoot'] is False

    def folded():
        annotations = harness.vm(sim, machine.name)['metadata'].get(
            'annotations', {})
        return 'sushy-kubevirt.io/bios-pending' not in annotations
    harness.wait_until(folded, 10, what='pending settings folded')
    _reset(emulator, machine, 'ForceOff')
    _power(emulator, machine, 'Off')
    current = requests.get(_url(emulator, machine), timeout=10).json()
    assert current['Attributes']['ProcTurboMode'] == 'Disabled'

    response = requests.post(_url(emulator, machine,
                                  '/Actions/Bios.ResetBios'), timeout=10)
    assert response.status_code == 204
    _reset(emulator, machine, 'On')
    _power(emulator, machine, 'On')
    current = requests.get(_url(emulator, machine), timeout=10).json()
    assert current['Attributes']['ProcTurboMode'] == 'Enabled'
    assert current['Attributes']['QuietBoot'] is True


@pytest.mark.parametrize('body, message_id', [
    ({'Attributes': {'Bogus': 'x'}}, 'PropertyUnknown'),
    ({'Attributes': {'ProcTurboMode': 'Maybe'}}, 'PropertyValueNotInList'),
    ({'Attributes': {'ProcTurboMode': 1}}, 'PropertyValueTypeError'),
    ({'Attributes': {'QuietBoot': 'true'}}, 'PropertyValueTypeError'),
    ({'Attributes': {'NumCores': 12}}, 'PropertyNotWritable'),
    ({'Attributes': {'SerialNumber': 'x' * 300_000}}, 'StringValueTooLong'),
    ({'Attributes': {}}, 'PropertyValueTypeError'),
    ({'Attributes': ['ProcTurboMode']}, 'PropertyValueTypeError'),
    ({'Attributes': {'ProcTurboMode': 'Disabled'}, 'Extra': 1},
     'PropertyUnknown'),
    ({'Attributes': {'ProcTurboMode': 'Disabled'},
      '@Redfish.SettingsApplyTime': {'ApplyTime': 'Immediate'}},
     'PropertyValueNotInList'),
    ({}, 'PropertyMissing'),
    ([], 'MalformedJSON'),
    (None, 'MalformedJSON'),
    ('On', 'MalformedJSON'),
])
def test_invalid_settings_change_nothing(sim, emulator, machine, body,
                                         message_id):
    before = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    response = requests.patch(_url(emulator, machine, '/Settings'),
                              json=body, timeout=10)
    assert response.status_code == 400, response.text
    info = response.json()['error']['@Message.ExtendedInfo'][0]
    assert info['MessageId'].endswith('.' + message_id), info
    after = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    assert after == before


@pytest.mark.parametrize('raw', [b'{"Attributes": {"SerialNumber": NaN}}',
                                 b'{"Attributes": {"SerialNumber": '
                                 b'Infinity}}'])
def test_non_finite_values_refused(emulator, machine, raw):
    response = requests.patch(
        _url(emulator, machine, '/Settings'), data=raw,
        headers={'Content-Type': 'application/json'}, timeout=10)
    assert response.status_code == 400
    _strict(response.text)
    settings = requests.get(_url(emulator, machine, '/Settings'),
                            timeout=10)
    assert _strict(settings.text)['Attributes']['SerialNumber'] == 'QPX12345'


def _strict(text):
    """Parse as strict JSON parsers do (no NaN, no Infinity)."""
    def refuse(name):
        raise AssertionError('non-standard JSON constant %s' % name)
    return json.loads(text, parse_constant=refuse)
