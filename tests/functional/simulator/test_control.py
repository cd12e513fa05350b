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

"""The fault control API and ``sushy-kubevirt-simulator fault``, over HTTP."""

import json
import os
import re
import signal
import subprocess
import sys
import time

from kubernetes import client
import pytest
import requests
from tests.functional.simulator import apitools

from sushy_kubevirt.simulator import command
from sushy_kubevirt import tethered

BIN = os.path.dirname(sys.executable)


@pytest.fixture
def control(simulator):
    url = simulator.start_control()
    session = requests.Session()
    session.headers['Authorization'] = 'Bearer ' + simulator.token
    session.base = url
    return session


def call(session, method, path, body=None):
    answer = session.request(method, session.base + path, json=body,
                             timeout=10)
    return answer.status_code, answer.json()


def fault(simulator, *argv):
    """Run the fault subcommand against ``simulator``; its exit code."""
    return command.main(['fault', '--url', simulator.control.url, '--token',
                         simulator.token] + list(argv))


def test_the_token_is_required(simulator, control):
    answer = requests.get(control.base + '/faults', timeout=10)
    assert answer.status_code == 401
    answer = requests.get(control.base + '/faults', timeout=10,
                          headers={'Authorization': 'Bearer wrong'})
    assert answer.status_code == 401


def test_add_list_and_remove_a_rule(simulator, control, custom):
    code, rule = call(control, 'POST', '/faults', {
        'action': 'status', 'code': 503, 'method': 'GET',
        'path': '/widgets$', 'times': None})
    assert code == 201
    assert rule['id'] and rule['times'] is None
    for _ in range(2):
        with pytest.raises(client.ApiException) as exc:
            custom.list_namespaced_custom_object(
                apitools.GROUP, apitools.VERSION,
                'default', apitools.PLURAL)
        assert exc.value.status == 503
    code, listed = call(control, 'GET', '/faults')
    assert [(r['id'], r['hits']) for r in listed['faults']] == [
        (rule['id'], 2)]
    assert call(control, 'DELETE', '/faults/' + rule['id'])[0] == 200
    assert call(control, 'DELETE', '/faults/' + rule['id'])[0] == 404
    custom.list_namespaced_custom_object(
        apitools.GROUP, apitools.VERSION, 'default',
        apitools.PLURAL)
    assert call(control, 'GET', '/faults')[1] == {'faults': []}


@pytest.mark.parametrize('body, message', [
    ({'action': 'explode'}, 'unknown action'),
    ({'action': 'status'}, 'status needs code'),
    ({'action': 'status', 'code': 'x'}, 'code must be'),
    ({'action': 'latency', 'seconds': 1, 'colour': 'red'},
     'unknown parameters for latency: colour'),
    ({'action': 'drop', 'times': 0}, 'times must be'),
    ([], 'must be a JSON object'),
])
def test_bad_rules_are_400_and_arm_nothing(control, body, message):
    code, answer = call(control, 'POST', '/faults', body)
    assert code == 400
    assert message in answer['error']
    assert call(control, 'GET', '/faults')[1] == {'faults': []}


def test_forbid_and_allow_a_namespace(simulator, control, custom):
    apitools.create(custom, 'w1')
    assert call(control, 'POST', '/namespaces/default/forbid')[1] == {
        'forbidden': ['default']}
    with pytest.raises(client.ApiException) as exc:
        custom.list_namespaced_custom_object(
            apitools.GROUP, apitools.VERSION, 'default',
            apitools.PLURAL)
    assert exc.value.status == 403
    assert apitools.body(exc.value)['reason'] == 'Forbidden'
    assert call(control, 'POST', '/namespaces/default/allow')[1] == {
        'forbidden': []}
    items = custom.list_namespaced_custom_object(
        apitools.GROUP, apitools.VERSION, 'default', apitools.PLURAL)['items']
    assert [i['metadata']['name'] for i in items] == ['w1']


def test_compact_makes_old_resource_versions_gone(simulator, control,
                                                  custom):
    rv = apitools.create(custom, 'w1')['metadata']['resourceVersion']
    apitools.create(custom, 'w2')
    code, answer = call(control, 'POST', '/compact')
    assert code == 200
    assert answer['compactedResourceVersion'] == str(
        simulator.store.resource_version)
    resp = apitools.watch_lines(custom, resource_version=rv)
    events = apitools.read_events(resp, limit=1)
    assert events[0]['type'] == 'ERROR'
    assert events[0]['object']['code'] == 410


def test_restart_api_refuses_connections_then_serves(simulator, control,
                                                     custom):
    apitools.create(custom, 'w1')
    code, answer = call(control, 'POST', '/restart-api',
                        {'down_seconds': 1.0})
    assert (code, answer['down_seconds']) == (202, 1.0)
    with pytest.raises(requests.ConnectionError):
        requests.get(simulator.url + '/version', timeout=2,
                     verify=simulator.ca_file)
    # The control API keeps answering while the API server is down.
    assert call(control, 'GET', '/faults')[0] == 200
    simulator.wait_for(lambda: _serving(simulator), timeout=10)
    items = custom.list_namespaced_custom_object(
        apitools.GROUP, apitools.VERSION, 'default', apitools.PLURAL)['items']
    assert len(items) == 1


def _serving(sim):
    try:
        return requests.get(sim.url + '/version', timeout=2,
                            verify=sim.ca_file).ok
    except requests.ConnectionError:
        return False


def test_bad_down_seconds_are_400(control):
    code, answer = call(control, 'POST', '/restart-api',
                        {'down_seconds': -1})
    assert code == 400


def test_fault_subcommand(simulator, control, custom, capsys):
    assert fault(simulator, 'add', 'status', '--param', 'code=500',
                 '--path', '/widgets$', '--times', '1') == 0
    rule = json.loads(capsys.readouterr().out)
    assert (rule['action'], rule['params']['code']) == ('status', 500)
    with pytest.raises(client.ApiException) as exc:
        custom.list_namespaced_custom_object(
            apitools.GROUP, apitools.VERSION, 'default',
            apitools.PLURAL)
    assert exc.value.status == 500
    assert fault(simulator, 'add', 'latency', '--param', 'seconds=0.01') == 0
    latency = json.loads(capsys.readouterr().out)
    assert latency['times'] is None
    assert fault(simulator, 'list') == 0
    listed = json.loads(capsys.readouterr().out)['faults']
    assert [r['id'] for r in listed] == [latency['id']]
    assert fault(simulator, 'remove', latency['id']) == 0
    assert fault(simulator, 'remove', latency['id']) == 1
    assert '404' in capsys.readouterr().err
    assert fault(simulator, 'forbid-namespace', 'default') == 0
    assert fault(simulator, 'allow-namespace', 'default') == 0
    assert fault(simulator, 'compact') == 0
    assert fault(simulator, 'clear') == 0


def test_fault_subcommand_reports_an_unreachable_simulator(capsys):
    assert command.main(['fault', '--url', 'http://127.0.0.1:1', 'list']) == 2
    assert 'cannot reach http://127.0.0.1:1' in capsys.readouterr().err


def test_console_script_serves_its_control_api(tmp_path):
    proc = tethered.popen(
        [os.path.join(BIN, 'sushy-kubevirt-simulator'), '--kubeconfig',
         str(tmp_path / 'kubeconfig'), '--token', 't0ken'],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r'control (http://127\.0\.0\.1:\d+)', line).group(1)
        out = subprocess.run(
            [os.path.join(BIN, 'sushy-kubevirt-simulator'), 'fault', '--url',
             url, '--token', 't0ken', 'add', 'status', '--param',
             'code=503'], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)['params']['code'] == 503
        denied = subprocess.run(
            [os.path.join(BIN, 'sushy-kubevirt-simulator'), 'fault', '--url',
             url, '--token', 'wrong', 'list'], capture_output=True,
            text=True, timeout=30)
        assert denied.returncode == 1 and '401' in denied.stderr
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
        proc.stdout.close()
