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
"""UpdateService, TaskService and FirmwareInventory over HTTP.

SimpleUpdate of a System's BIOS or its Manager: a 202 with the Task and
its monitor, the task kept on the VM (New, Running, then Completed or
Exception), the BIOS version current from the next start, the Manager's
at once; bad input a 400 that writes nothing; every process shows the
same task; warm reads cost no API call.
"""

import collections
import http.server
import json
import threading
import time

from kubernetes import client
from kubernetes import config as kube_config
import pytest
import requests
import sushy
from tests import backend
from tests.functional.emulator import harness

SERVICE = '/redfish/v1/UpdateService'
ACTION = SERVICE + '/Actions/UpdateService.SimpleUpdate'
INVENTORY = SERVICE + '/FirmwareInventory'
TASKS = '/redfish/v1/TaskService/Tasks'
MONITORS = '/redfish/v1/TaskService/TaskMonitors/'


class _Images(http.server.BaseHTTPRequestHandler):
    """200 to a HEAD of ``/*.bin`` (once ``gate`` is set), 404 else."""

    gate = threading.Event()

    def do_HEAD(self):
        if not self.path.endswith('.bin'):
            self.send_response(404)
        else:
            self.gate.wait(30)
            self.send_response(200)
            self.send_header('Content-Length', '1024')
        self.end_headers()

    do_GET = do_HEAD

    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def images():
    _Images.gate.set()
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Images)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield lambda name: 'http://127.0.0.1:%d/%s' % (
            server.server_port, name)
    finally:
        _Images.gate.set()
        server.shutdown()
        server.server_close()


def _update(url, body):
    return requests.post(url + ACTION, json=body, timeout=30)


def _finished(url, monitor, timeout=30):
    def done():
        answer = requests.get(url + monitor, timeout=10)
        return answer if answer.status_code == 200 else None
    return harness.wait_until(done, timeout, what='task finished').json()


def _system(emulator, machine):
    return requests.get(emulator.url + machine.path, timeout=10).json()


def _reset(emulator, machine, reset_type, state):
    answer = requests.post(
        emulator.url + machine.path + '/Actions/ComputerSystem.Reset',
        json={'ResetType': reset_type}, timeout=30)
    assert answer.status_code == 204, answer.text
    harness.wait_until(lambda: _system(emulator, machine)['PowerState']
                       == state, 30, what=state)


def test_service_root_service_and_inventory(emulator, machine):
    root = requests.get(emulator.url + '/redfish/v1/', timeout=10).json()
    assert root['UpdateService'] == {'@odata.id': SERVICE}
    service = requests.get(emulator.url + root['UpdateService'][
        '@odata.id'], timeout=10).json()
    assert service['Actions']['#UpdateService.SimpleUpdate'][
        'target'] == ACTION
    assert service['FirmwareInventory'] == {'@odata.id': INVENTORY}
    members = [m['@odata.id'] for m in requests.get(
        emulator.url + INVENTORY, timeout=10).json()['Members']]
    bios = '%s/%s-BIOS' % (INVENTORY, machine.uuid)
    assert bios in members and bios[:-4] + 'BMC' in members
    member = requests.get(emulator.url + bios, timeout=10).json()
    assert (member['Version'], member['SoftwareId']) == ('1.0.0', 'BIOS')
    assert member['RelatedItem'] == [{'@odata.id': machine.path + '/Bios'}]
    tasks = requests.get(emulator.url + root['Tasks']['@odata.id'],
                         timeout=10).json()
    assert tasks['Tasks'] == {'@odata.id': TASKS}


def test_sushy_updates_the_bios_at_next_start(emulator, redfish, machine,
                                              images):
    """As Ironic's redfish firmware interface does it."""
    updates = redfish.get_update_service()
    monitor = updates.simple_update(images('bios-2.1.0.bin'),
                                    targets=[machine.path])
    assert monitor.task_monitor_uri.startswith(TASKS + '/')
    monitor.wait(30)
    task = monitor.get_task()
    assert task.task_state == sushy.TASK_STATE_COMPLETED
    assert task.task_status == sushy.HEALTH_OK
    system = redfish.get_system(machine.path)
    assert system.bios_version == '1.0.0', 'pending until the next start'
    _reset(emulator, machine, 'On', 'On')
    system.refresh()
    assert system.bios_version == '2.1.0'
    member = requests.get('%s%s/%s-BIOS' % (emulator.url, INVENTORY,
                                            machine.uuid), timeout=10)
    assert member.json()['Version'] == '2.1.0'


def test_a_task_goes_new_running_completed(emulator, machine, images):
    _Images.gate.clear()
    try:
        answer = _update(emulator.url, {
            'ImageURI': images('bios-3.0.1.bin'),
            'Targets': [machine.path], 'TransferProtocol': 'HTTP'})
        assert answer.status_code == 202, answer.text
        task = answer.json()
        monitor = answer.headers['Location']
        assert monitor == MONITORS + task['Id']
        assert task['@odata.id'] == TASKS + '/' + task['Id']
        assert task['TaskState'] == 'New' and task['TaskMonitor'] == monitor

        def running():
            polled = requests.get(emulator.url + monitor, timeout=10)
            assert polled.status_code == 202
            return polled.json()['TaskState'] == 'Running'
        harness.wait_until(running, 20, what='Running')
        busy = _update(emulator.url, {'ImageURI': images('bios-3.0.2.bin'),
                                      'Targets': [machine.path]})
        assert busy.status_code == 409, busy.text
        listed = requests.get(emulator.url + TASKS, timeout=10).json()
        assert {'@odata.id': task['@odata.id']} in listed['Members']
    finally:
        _Images.gate.set()
    done = _finished(emulator.url, monitor)
    assert (done['TaskState'], done['TaskStatus']) == ('Completed', 'OK')
    assert [m['MessageId'] for m in done['Messages']] == [
        'Update.1.0.UpdateSuccessful', 'Update.1.0.AwaitToActivate']
    assert requests.get(emulator.url + task['@odata.id'],
                        timeout=10).json() == done


def test_a_restart_while_the_task_runs_applies_the_bios(
        emulator, machine, images):
    """Ironic restarts the node as soon as a BIOS update task runs."""
    _reset(emulator, machine, 'On', 'On')
    _Images.gate.clear()
    try:
        answer = _update(emulator.url, {'ImageURI': images('bios-8.0.bin'),
                                        'Targets': [machine.path]})
        assert answer.status_code == 202, answer.text
        harness.wait_until(lambda: requests.get(
            emulator.url + answer.headers['Location'], timeout=10).json()[
            'TaskState'] == 'Running', 20, what='Running')
        _reset(emulator, machine, 'ForceOff', 'Off')
        _reset(emulator, machine, 'On', 'On')
    finally:
        _Images.gate.set()
    assert _finished(emulator.url, answer.headers['Location'])[
        'TaskState'] == 'Completed'
    assert _system(emulator, machine)['BiosVersion'] == '8.0'


def test_an_image_that_is_not_found_is_an_exception(emulator, machine,
                                                    images):
    answer = _update(emulator.url, {
        'ImageURI': images('missing.img'), 'Targets': [machine.path],
        'Username': 'fw-user', 'Password': 'fw-secret'})
    assert answer.status_code == 202, answer.text
    done = _finished(emulator.url, answer.headers['Location'])
    assert (done['TaskState'], done['TaskStatus']) == ('Exception',
                                                       'Critical')
    assert done['Messages'][0]['MessageId'] == 'Update.1.0.TransferFailed'
    assert '404' in done['Messages'][1]['Resolution']
    assert 'fw-secret' not in json.dumps(done)
    assert _system(emulator, machine)['BiosVersion'] == '1.0.0'


@pytest.mark.parametrize('target, image, version', [
    ('/redfish/v1/Managers/%s', 'fw_v4.2.bin', '4.2'),
    # What Ironic sends: its node's System; the image names the BMC.
    ('/redfish/v1/Systems/%s', 'BMC-4.3.1.bin', '4.3.1'),
])
def test_the_manager_takes_its_version_at_once(emulator, machine, images,
                                               target, image, version):
    manager = '/redfish/v1/Managers/' + machine.uuid
    answer = _update(emulator.url, {'ImageURI': images(image),
                                    'Targets': [target % machine.uuid]})
    assert answer.status_code == 202, answer.text
    done = _finished(emulator.url, answer.headers['Location'])
    assert done['TaskState'] == 'Completed'
    assert [m['MessageId'] for m in done['Messages']] == [
        'Update.1.0.UpdateSuccessful']
    assert requests.get(emulator.url + manager, timeout=10).json()[
        'FirmwareVersion'] == version
    member = requests.get('%s%s/%s-BMC' % (emulator.url, INVENTORY,
                                           machine.uuid), timeout=10)
    assert member.json()['Version'] == version
    assert _system(emulator, machine)['BiosVersion'] == '1.0.0'


@pytest.mark.parametrize('body, message_id', [
    ({}, 'ActionParameterMissing'),
    ({'ImageURI': 'ftp://images.example/bios-1.2.bin'},
     'ActionParameterValueFormatError'),
    ({'ImageURI': 42}, 'ActionParameterValueTypeError'),
    ({'ImageURI': 'http://169.254.169.254/bios-1.2.bin'},
     'ActionParameterValueConflict'),
    ({'TransferProtocol': 'NFS'}, 'ActionParameterValueNotInList'),
    ({'Targets': ['/redfish/v1/Systems/no-such-system']},
     'ActionParameterValueNotInList'),
    ({'Targets': ['/redfish/v1/Chassis/x']},
     'ActionParameterValueNotInList'),
    ({'Targets': 'x'}, 'ActionParameterValueTypeError'),
    ({'Targets': []}, 'ActionParameterMissing'),
    ({'Targets': ['/redfish/v1/Systems/a', '/redfish/v1/Systems/b']},
     'ArraySizeTooLong'),
    ({'Username': 'only'}, 'ActionParameterMissing'),
    ({'Oops': 1}, 'ActionParameterUnknown'),
])
def test_bad_input_is_a_400_that_writes_nothing(sim, emulator, machine,
                                                images, body, message_id):
    full = {'ImageURI': images('bios-9.9.bin'), 'Targets': [machine.path]}
    full.update(body)
    if body == {}:
        full = {'Targets': [machine.path]}
    before = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    answer = _update(emulator.url, full)
    assert answer.status_code == 400, answer.text
    info = answer.json()['error']['@Message.ExtendedInfo'][0]
    assert info['MessageId'].endswith('.' + message_id), info
    assert harness.vm(sim, machine.name)['metadata'][
        'resourceVersion'] == before


def test_without_targets_several_systems_are_a_400(emulator, images):
    answer = _update(emulator.url, {'ImageURI': images('bios-1.1.bin')})
    assert answer.status_code == 400
    assert 'Targets' in answer.json()['error']['message']


def test_a_task_left_running_reads_interrupted(
        sim, emulator, machine, tmp_path):
    api = kube_config.new_client_from_config(
        config_file=backend.write_admin_kubeconfig(
            sim, str(tmp_path / 'kubeconfig')))
    record = {'n': 7, 'component': 'BIOS', 'image': 'http://x/bios-5.0.bin',
              'version': '5.0', 'state': 'Running',
              'start': time.time() - 600, 'bound': 35.0, 'end': None,
              'reason': None}
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        'kubevirt.io', 'v1', 'default', 'virtualmachines', machine.name,
        {'metadata': {'annotations': {
            'sushy-kubevirt.io/firmware-task': json.dumps(record)}}})
    harness.wait_caught_up(sim, emulator.url + machine.path, machine.name)
    task = requests.get('%s%s/%s.7' % (emulator.url, TASKS, machine.uuid),
                        timeout=10)
    assert task.status_code == 200
    assert task.json()['TaskState'] == 'Exception'
    assert 'interrupted' in task.json()['Messages'][1]['Resolution']


def test_two_replicas_show_the_same_task(
        config_file, machine, images, tmp_path_factory):
    with harness.replicas(config_file, tmp_path_factory) as (here, other):
        answer = _update(here, {'ImageURI': images('bios-6.1.bin'),
                                'Targets': [machine.path]})
        assert answer.status_code == 202, answer.text
        done = _finished(other, answer.headers['Location'])
        assert done['TaskState'] == 'Completed'
        assert requests.get(here + answer.headers['Location'],
                            timeout=10).json() == done


def _calls(sim, effective=False):
    """The calls made (``effective``: the writes answered 2xx)."""
    return collections.Counter(
        '%s %s' % (e['verb'], e['resource'])
        for e in harness.api_calls(sim) if e['verb'] != 'list' and (
            not effective or e['verb'] != 'get' and e['status'] < 300))


def test_api_calls(sim, emulator, machine, images, capsys):
    sim.request_log.clear()
    answer = _update(emulator.url, {'ImageURI': images('bios-7.0.bin'),
                                    'Targets': [machine.path]})
    assert answer.status_code == 202, answer.text
    monitor = answer.headers['Location']
    _finished(emulator.url, monitor)
    # A controller's write in between costs a retry (a live GET, a PATCH).
    update, effective = _calls(sim), _calls(sim, effective=True)
    assert effective == {'patch virtualmachines': 3}, update
    reads = (monitor, answer.json()['@odata.id'], TASKS, SERVICE,
             INVENTORY, '%s/%s-BIOS' % (INVENTORY, machine.uuid),
             '/redfish/v1/TaskService')
    for path in reads:
        requests.get(emulator.url + path, timeout=10)   # warm
    sim.request_log.clear()
    for path in reads:
        assert requests.get(emulator.url + path,
                            timeout=10).status_code == 200, path
    assert _calls(sim) == {}
    with capsys.disabled():
        print('\nAPI calls: SimpleUpdate %s (effective %s); warm GETs of %d '
              'task and inventory resources: 0' % (
                  dict(update), dict(effective), len(reads)))
