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

"""The console scripts as a new user first meets them."""

import importlib.metadata
import os
import socket
import subprocess
import sys
import time

import pytest
import requests
from tests.functional.emulator import harness

from sushy_kubevirt.simulator import kubeconfig

BIN = os.path.dirname(sys.executable)
HINT = 'No cluster at hand? sushy-kubevirt-emulator --simulate N'


def _run(*argv):
    return subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]),
                          capture_output=True, text=True, timeout=60)


def test_emulator_help_lists_simulate_and_the_emulator_options():
    result = _run('sushy-kubevirt-emulator', '--help')
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith('usage: sushy-kubevirt-emulator')
    assert '--simulate N' in out
    assert 'configuration reference' in out
    sample = out.split('is installed as\n', 1)[1].split()[0]
    assert 'SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE' in open(sample).read()
    # sushy-emulator's own options follow ours.
    assert '--config CONFIG' in out and '--feature-set' in out


def test_emulator_version_names_both_packages():
    result = _run('sushy-kubevirt-emulator', '--version')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'sushy-kubevirt %s (sushy-tools %s)' % (
        importlib.metadata.version('sushy-kubevirt'),
        importlib.metadata.version('sushy-tools'))


def test_simulator_version():
    result = _run('sushy-kubevirt-simulator', '--version')
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'sushy-kubevirt-simulator %s' % (
        importlib.metadata.version('sushy-kubevirt'))


def test_the_demo_shuts_down_gracefully_within_seconds(tmp_path):
    port = harness.free_port()
    process = harness.Process(
        [os.path.join(BIN, 'sushy-kubevirt-emulator'), '--simulate', '1',
         '-i', '127.0.0.1', '-p', str(port)], port,
        str(tmp_path / 'demo.log'))
    try:
        process.start().wait_ready()
        url = process.url + '/redfish/v1/Systems'
        system = process.url + requests.get(url).json()['Members'][0][
            '@odata.id']
        reset = system + '/Actions/ComputerSystem.Reset'

        def power(state):
            return requests.get(system).json()['PowerState'] == state
        assert requests.post(reset, json={'ResetType': 'On'}).ok
        harness.wait_until(lambda: power('On'), 30, 0.2, 'On')
        started = time.monotonic()
        assert requests.post(reset, json={
            'ResetType': 'GracefulShutdown'}).ok
        harness.wait_until(lambda: power('Off'), 30, 0.2, 'Off')
        assert time.monotonic() - started < 10
    finally:
        process.stop()


def test_the_demo_serves_sessions_and_the_eventservice(tmp_path):
    port = harness.free_port()
    log = tmp_path / 'demo.log'
    process = harness.Process(
        [os.path.join(BIN, 'sushy-kubevirt-emulator'), '--simulate', '2',
         '-i', '127.0.0.1', '-p', str(port)], port, str(log))
    try:
        process.start().wait_ready()
        redfish = process.url + '/redfish/v1'
        assert requests.get(redfish + '/EventService').json()[
            'ServiceEnabled'] is True
        created = requests.post(redfish + '/EventService/Subscriptions',
                                json={'Destination': 'http://127.0.0.1:9/',
                                      'Protocol': 'Redfish'})
        assert created.status_code == 201, created.text
        login = requests.post(redfish + '/SessionService/Sessions',
                              json={'UserName': 'demo', 'Password': 'demo'})
        assert login.status_code == 201, login.text
        assert requests.get(redfish + '/Systems', headers={
            'X-Auth-Token': login.headers['X-Auth-Token']}).ok
        out = log.read_text()
        assert 'Redfish service: %s' % redfish in out
        assert 'VMs (2): default/vm-00000, default/vm-00001' in out
        assert 'EventService: %s/EventService' % redfish in out
        assert 'Sessions: %s/SessionService/Sessions' % redfish in out
        assert 'kubeconfig ' in out
    finally:
        process.stop()


def test_the_demo_keeps_the_config_files_values(tmp_path):
    conf = tmp_path / 'demo.conf'
    conf.write_text('SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE = None\n')
    port = harness.free_port()
    process = harness.Process(
        [os.path.join(BIN, 'sushy-kubevirt-emulator'), '--simulate', '1',
         '--config', str(conf), '-i', '127.0.0.1', '-p', str(port)], port,
        str(tmp_path / 'demo.log'))
    try:
        process.start().wait_ready()
        assert requests.get(
            process.url + '/redfish/v1/EventService').status_code == 404
        assert 'EventService: off' in (tmp_path / 'demo.log').read_text()
    finally:
        process.stop()


def _start_without_cluster(program, tmp_path, *settings):
    """Start ``program`` on a config of the kubevirt driver; its stderr."""
    env = dict(os.environ, HOME=str(tmp_path))
    env.pop('KUBERNETES_SERVICE_HOST', None)
    conf = tmp_path / 'kubevirt.conf'
    conf.write_text('\n'.join(('import sushy_kubevirt.plugin  # noqa',
                               "SUSHY_EMULATOR_SYSTEMS_DRIVER = 'kubevirt'")
                              + settings) + '\n')
    result = subprocess.run(
        [os.path.join(BIN, program), '--config', str(conf),
         '-i', '127.0.0.1', '-p', str(harness.free_port())],
        capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize('program', ['sushy-emulator',
                                     'sushy-kubevirt-emulator'])
def test_no_kubeconfig_suggests_the_demo(tmp_path, program):
    err = _start_without_cluster(program, tmp_path)
    assert 'SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG: cannot load' in err
    assert err.count(HINT) == 1, err


def test_an_unreachable_cluster_suggests_the_demo(tmp_path):
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        url = 'http://127.0.0.1:%d' % sock.getsockname()[1]
    path = kubeconfig.write(tmp_path / 'kc', url, 'token', 'default')
    err = _start_without_cluster(
        'sushy-emulator', tmp_path,
        'SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG = %r' % str(path))
    assert 'Cannot reach the Kubernetes API server at %s' % url in err
    assert err.count(HINT) == 1, err


def test_other_start_errors_give_no_hint(tmp_path):
    err = _start_without_cluster('sushy-emulator', tmp_path,
                                 "SUSHY_EMULATOR_KUBEVIRT_QPS = 'fast'")
    assert 'SUSHY_EMULATOR_KUBEVIRT_QPS' in err
    assert HINT not in err
