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

import base64
import json
import logging

from kubernetes import client
from kubernetes.client import rest
from kubernetes import config as kube_config
import pytest
import requests
import sushy
from tests import backend
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


def _kube(sim, tmp_path):
    """An administrator's client (it deletes a VM)."""
    return kube_config.new_client_from_config(
        config_file=backend.write_admin_kubeconfig(
            sim, str(tmp_path / 'kubeconfig')))


def _bios_secret(api_client, name):
    try:
        return client.CoreV1Api(api_client).read_namespaced_secret(
            name + '-bios', 'default')
    except rest.ApiException as exc:
        assert exc.status == 404, exc
        return None


def _visible(sim, emulator, machine):
    """Everything a client and the VM show of the BIOS, as text."""
    return ' '.join([
        requests.get(_url(emulator, machine), timeout=10).text,
        requests.get(_url(emulator, machine, '/Settings'), timeout=10).text,
        json.dumps(harness.vm(sim, machine.name))])


def test_passwords_are_write_only_and_kept_in_a_secret(
        sim, emulator, machine, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    secret = 'Hunter2-' + machine.name
    api = _kube(sim, tmp_path)
    response = requests.patch(_url(emulator, machine, '/Settings'), json={
        'Attributes': {'SysPassword': secret, 'QuietBoot': False}},
        timeout=10)
    assert response.status_code == 204, response.text
    for sub in ('', '/Settings'):
        attributes = requests.get(_url(emulator, machine, sub),
                                  timeout=10).json()['Attributes']
        assert attributes['SysPassword'] is None, attributes
    assert secret not in _visible(sim, emulator, machine)

    stored = _bios_secret(api, machine.name)
    assert base64.b64decode(stored.data['SysPassword']).decode() == secret
    vm = harness.vm(sim, machine.name)
    assert [(o.kind, o.name, o.uid) for o in
            stored.metadata.owner_references] == [
        ('VirtualMachine', machine.name, vm['metadata']['uid'])]

    # A refused value is not echoed either.
    refused = secret * 10
    response = requests.patch(_url(emulator, machine, '/Settings'), json={
        'Attributes': {'SysPassword': refused}}, timeout=10)
    assert response.status_code == 400
    assert secret not in response.text
    assert not [r for r in caplog.records if secret in r.getMessage()
                and not r.name.startswith('sushy_kubevirt.simulator')]

    # The garbage collector removes it with the VM.
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        'kubevirt.io', 'v1', 'default', 'virtualmachines', machine.name)
    harness.wait_until(lambda: _bios_secret(api, machine.name) is None,
                       20, what='BIOS Secret collected')


def test_reset_bios_clears_passwords(sim, emulator, machine, tmp_path):
    api = _kube(sim, tmp_path)
    for value in ('first', 'second'):
        response = requests.patch(_url(emulator, machine, '/Settings'),
                                  json={'Attributes': {'SysPassword': value}},
                                  timeout=10)
        assert response.status_code == 204, response.text
        stored = _bios_secret(api, machine.name)
        assert base64.b64decode(stored.data['SysPassword']) == \
            value.encode()
    response = requests.post(_url(emulator, machine,
                                  '/Actions/Bios.ResetBios'), timeout=10)
    assert response.status_code == 204
    assert _bios_secret(api, machine.name) is None


def test_clear_text_left_by_an_earlier_version_moves_to_the_secret(
        sim, emulator, machine, tmp_path):
    api = _kube(sim, tmp_path)
    legacy = 'Legacy-' + machine.name
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        'kubevirt.io', 'v1', 'default', 'virtualmachines', machine.name,
        {'metadata': {'annotations': {'sushy-kubevirt.io/bios': json.dumps(
            {'SysPassword': legacy, 'QuietBoot': False})}}})
    url = emulator.url + machine.path
    harness.wait_caught_up(sim, url, machine.name)
    text = requests.get(_url(emulator, machine), timeout=10).text
    assert legacy not in text
    response = requests.patch(_url(emulator, machine, '/Settings'), json={
        'Attributes': {'ProcTurboMode': 'Disabled'}}, timeout=10)
    assert response.status_code == 204, response.text
    assert legacy not in json.dumps(harness.vm(sim, machine.name))
    attributes = requests.get(_url(emulator, machine), timeout=10).json()[
        'Attributes']
    assert attributes['QuietBoot'] is False, 'the other values stay'
    stored = _bios_secret(api, machine.name)
    assert base64.b64decode(stored.data['SysPassword']).decode() == legacy
