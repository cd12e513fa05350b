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

"""The emulator run the three ways, as subprocesses, driven by sushy."""

import pytest
import requests
import sushy
from tests.functional.emulator import harness


def _wait_power(system, state):
    def reached():
        system.refresh()
        return system.power_state == state
    harness.wait_until(reached, 30, 0.2, 'power state %s' % state)


def _error(response, status):
    assert response.status_code == status, response.text
    message = response.json()['error']['message']
    assert message
    return message


def _bad_input(sim, url, machine):
    before = harness.vm(sim, machine.name)
    system = url + machine.path
    reset = system + '/Actions/ComputerSystem.Reset'
    _error(requests.post(reset, json={'ResetType': 'Explode'}), 400)
    _error(requests.post(reset, json={}), 400)
    _error(requests.patch(system, json={'Boot': {
        'BootSourceOverrideTarget': 'Floppy'}}), 400)
    _error(requests.patch(system, json={'Boot': {
        'BootSourceOverrideTarget': 'Network'}}), 400)
    _error(requests.patch(system, json={'Boot': {
        'BootSourceOverrideTarget': 'Pxe',
        'BootSourceOverrideEnabled': 'Sometimes'}}), 400)
    _error(requests.patch(system, data='{"Boot": {',
                          headers={'Content-Type': 'application/json'}),
           400)
    _error(requests.get(url + '/redfish/v1/Systems/no-such-vm'), 404)
    _error(requests.post(url + '/redfish/v1/Systems/no-such-vm/Actions/'
                         'ComputerSystem.Reset', json={'ResetType': 'On'}),
           404)
    after = harness.vm(sim, machine.name)
    assert after['spec'] == before['spec']
    assert after['metadata']['resourceVersion'] == \
        before['metadata']['resourceVersion']


def _scenario(sim, url, machine):
    conn = sushy.Sushy(url + '/redfish/v1/', auth=harness.NoAuth(),
                       server_side_retries=0)
    members = conn.get_system_collection().members_identities
    assert machine.path in members and len(members) == sim.vms

    system = conn.get_system(machine.path)
    assert (system.name, system.uuid) == (machine.name, machine.uuid)

    system.reset_system(sushy.RESET_ON)
    _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)
    system.reset_system(sushy.RESET_FORCE_OFF)
    _wait_power(system, sushy.SYSTEM_POWER_STATE_OFF)

    system.set_system_boot_options(sushy.BOOT_SOURCE_TARGET_PXE)
    # Another worker may answer the GET; its cache converges by watch.
    harness.wait_until(
        lambda: conn.get_system(machine.path).boot.target ==
        sushy.BOOT_SOURCE_TARGET_PXE, 10, 0.1, 'boot target Pxe')
    interface = harness.vm(sim, machine.name)['spec']['template']['spec'][
        'domain']['devices']['interfaces'][0]
    assert interface['bootOrder'] == 1

    by_name = requests.get(url + '/redfish/v1/Systems/' + machine.name,
                           allow_redirects=False)
    assert by_name.status_code == 307
    assert by_name.headers['Location'].endswith(machine.path)
    assert conn.get_system('/redfish/v1/Systems/' + machine.name).uuid == \
        machine.uuid

    _bad_input(sim, url, machine)


@pytest.mark.parametrize('mode', harness.MODES)
def test_core_scenario(mode, sim, config_file, machines, tmp_path):
    machine = machines()
    process = harness.emulator_process(mode, config_file, tmp_path)
    try:
        process.start().wait_ready()
        _scenario(sim, process.url, machine)
    finally:
        process.stop()


def test_fake_driver_still_works_without_the_keys(tmp_path):
    config = harness.write_config(tmp_path / 'fake.conf', drivers=False)
    process = harness.emulator_process('sushy-emulator', config, tmp_path)
    process.argv.append('--fake')
    try:
        process.start().wait_ready()
        systems = requests.get(process.url + '/redfish/v1/Systems').json()
        assert systems['Members@odata.count'] >= 1
        assert requests.get(process.url + '/metrics').status_code == 404
    finally:
        process.stop()


@pytest.mark.parametrize('mode', ['sushy-emulator', 'gunicorn'])
def test_unknown_driver_stops_start_up(mode, tmp_path):
    config = harness.write_config(tmp_path / 'bad.conf', drivers=False,
                                  SUSHY_EMULATOR_SYSTEMS_DRIVER='nope')
    process = harness.emulator_process(mode, config, tmp_path)
    assert process.start().wait_exit() != 0
    log = process.log()
    assert "SUSHY_EMULATOR_SYSTEMS_DRIVER = 'nope' is not an installed " \
        'driver' in log
    assert 'sushy_tools.emulator.systems: kubevirt' in log


def test_missing_namespace_stops_start_up(sim, tmp_path):
    kubeconfig = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    config = harness.write_config(
        tmp_path / 'ns.conf', kubeconfig,
        SUSHY_EMULATOR_KUBEVIRT_NAMESPACES=['no-such-namespace'])
    process = harness.emulator_process('sushy-emulator', config, tmp_path)
    assert process.start().wait_exit() != 0
    assert "SUSHY_EMULATOR_KUBEVIRT_NAMESPACES: namespace " \
        "'no-such-namespace' does not exist" in process.log()
