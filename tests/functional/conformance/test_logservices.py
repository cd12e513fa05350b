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
"""LogServices over HTTP: a System's Kubernetes Events, the security log.

Events are created with the official ``kubernetes`` client, as
virt-controller and CDI would; the emulator (Basic auth, an htpasswd
file) reads them from its watch, hides them after ClearLog and writes
the security log's records itself.
"""

import datetime

import bcrypt
from kubernetes import client
from kubernetes import config as kube_config
import pytest
import requests
from sushy_tools.emulator import main
from tests import backend
from tests.functional.conformance import conftest
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

USER, PASSWORD = 'admin', 'S3cret-password'
AUTH = (USER, PASSWORD)
#: The user whose password is guessed until it is locked out.
VICTIM = 'victim'
COST = 4

sim = conftest.sim_fixture(2)


@pytest.fixture(scope='module')
def emulator(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('logs')
    auth_file = tmp / 'htpasswd'
    auth_file.write_text(''.join('%s:%s\n' % (user, bcrypt.hashpw(
        PASSWORD.encode(), bcrypt.gensalt(COST)).decode())
        for user in (USER, VICTIM)))
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(auth_file),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD=2)
    with harness.InProcess(config) as server:
        yield server


@pytest.fixture(scope='module')
def core(sim, tmp_path_factory):
    path = tmp_path_factory.mktemp('admin') / 'kubeconfig'
    api_client = kube_config.new_client_from_config(
        config_file=backend.write_admin_kubeconfig(sim, str(path)) or
        str(path))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def get(emulator, path, **kwargs):
    answer = requests.get(emulator.url + path, auth=AUTH, timeout=30,
                          **kwargs)
    assert answer.status_code == 200, answer.text
    return answer.json()


def emit(core, kind, name, reason, message, type_='Normal', when=None):
    when = when or datetime.datetime.now(datetime.timezone.utc)
    stamp = when.strftime('%Y-%m-%dT%H:%M:%SZ')
    return core.create_namespaced_event('default', {
        'apiVersion': 'v1', 'kind': 'Event',
        'metadata': {'generateName': name + '.'},
        'involvedObject': {'kind': kind, 'name': name,
                           'namespace': 'default'},
        'reason': reason, 'message': message, 'type': type_,
        'source': {'component': 'virt-controller'},
        'firstTimestamp': stamp, 'lastTimestamp': stamp, 'count': 1})


def entries(emulator, path):
    return get(emulator, path + '/Entries')['Members']


def wait_entries(emulator, path, predicate):
    found = []

    def check():
        found[:] = entries(emulator, path)
        return predicate(found)
    harness.wait_until(check, what='the log entries')
    return found


def test_system_log(sim, emulator, core):
    name = 'vm-00000'
    system = '/redfish/v1/Systems/%s' % identity.firmware_uuid(
        harness.vm(sim, name))
    assert get(emulator, system)['LogServices'] == {
        '@odata.id': system + '/LogServices'}
    services = get(emulator, system + '/LogServices')
    log = services['Members'][0]['@odata.id']
    assert log == system + '/LogServices/Log'
    body = get(emulator, log)
    assert body['Entries'] == {'@odata.id': log + '/Entries'}
    clear = body['Actions']['#LogService.ClearLog']['target']

    # older than any marker; another VM's and a Pod's are not this log's
    past = datetime.datetime.now(datetime.timezone.utc) - \
        datetime.timedelta(seconds=30)
    failed = emit(core, 'VirtualMachineInstance', name, 'FailedScheduling',
                  '0/1 nodes are available', 'Warning', past)
    emit(core, 'VirtualMachine', 'vm-00001', 'SuccessfulCreate', 'other')
    emit(core, 'Pod', name, 'Pulled', 'not a VM object')
    shown = wait_entries(emulator, log, lambda found: any(
        e['Id'] == failed.metadata.uid for e in found))
    entry = next(e for e in shown if e['Id'] == failed.metadata.uid)
    assert entry['Severity'] == 'Warning'
    assert entry['EntryType'] == 'Event'
    assert entry['Message'] == 'FailedScheduling: 0/1 nodes are available'
    assert entry['Created'] == past.strftime('%Y-%m-%dT%H:%M:%S+00:00')
    assert entry['Links']['OriginOfCondition'] == {'@odata.id': system}
    assert all('other' not in e['Message'] and 'Pulled' not in e['Message']
               for e in shown)
    assert get(emulator, entry['@odata.id']) == entry

    # warm reads make no API call about Events; each reads the cache
    accounting = main.app.systems.cluster.accounting
    live = accounting.live_calls(resource='events')
    cached = accounting.cache_reads(resource='events')
    entries(emulator, log)
    assert accounting.live_calls(resource='events') == live
    assert accounting.cache_reads(resource='events') > cached

    answer = requests.post(emulator.url + clear, json={'Bogus': 1},
                           auth=AUTH, timeout=30)
    assert answer.status_code == 400
    assert 'ActionParameterUnknown' in answer.text
    assert entries(emulator, log) == shown
    answer = requests.post(emulator.url + clear, json={}, auth=AUTH,
                           timeout=30)
    assert answer.status_code == 204, answer.text
    shown = entries(emulator, log)
    assert [e['Message'].split(':')[0] for e in shown] == [
        'RedfishLogCleared']
    later = emit(core, 'VirtualMachine', name, 'Started', 'VM started',
                 when=datetime.datetime.now(datetime.timezone.utc)
                 + datetime.timedelta(seconds=2))
    shown = wait_entries(emulator, log, lambda found: len(found) == 2)
    assert shown[1]['Id'] == later.metadata.uid
    assert shown[1]['Severity'] == 'OK'


def test_events_of_one_second_keep_the_order_they_were_written(
        sim, emulator, core):
    name = 'vm-00001'
    log = '/redfish/v1/Systems/%s/LogServices/Log' % identity.firmware_uuid(
        harness.vm(sim, name))
    second = datetime.datetime.now(datetime.timezone.utc)
    # An import's Events, all of one second (their random uids, which
    # ordered them before, would put 8 in this order once in 40,320).
    uids = [emit(core, 'DataVolume', name + '-root', 'Import%d' % n,
                 'step %d' % n, when=second).metadata.uid
            for n in range(8)]
    shown = wait_entries(emulator, log, lambda found: set(uids) <= {
        e['Id'] for e in found})
    assert [e['Id'] for e in shown if e['Id'] in uids] == uids


def test_unknown_log_and_entry(emulator, sim):
    system = '/redfish/v1/Systems/%s' % identity.firmware_uuid(
        harness.vm(sim, 'vm-00001'))
    for path in ('/LogServices/Other', '/LogServices/Log/Entries/nope',
                 '/LogServices/Other/Entries'):
        answer = requests.get(emulator.url + system + path, auth=AUTH,
                              timeout=30)
        assert answer.status_code == 404, path
    answer = requests.get(emulator.url + '/redfish/v1/Systems/missing'
                          '/LogServices', auth=AUTH, timeout=30)
    assert answer.status_code == 404


def test_security_log(emulator):
    manager = get(emulator, '/redfish/v1/Managers')['Members'][0][
        '@odata.id']
    assert get(emulator, manager)['LogServices'] == {
        '@odata.id': manager + '/LogServices'}
    log = get(emulator, manager + '/LogServices')['Members'][0]['@odata.id']
    assert log == manager + '/LogServices/SecurityLog'
    clear = get(emulator, log)['Actions']['#LogService.ClearLog']['target']

    answer = requests.get(emulator.url + manager, auth=(VICTIM, 'wrong'),
                          timeout=30)
    assert answer.status_code == 401
    login = requests.post(emulator.url + '/redfish/v1/SessionService/'
                          'Sessions', json={'UserName': USER,
                                            'Password': PASSWORD},
                          timeout=30)
    assert login.status_code == 201, login.text
    requests.delete(emulator.url + login.headers['Location'], timeout=30,
                    headers={'X-Auth-Token': login.headers['X-Auth-Token']})
    shown = wait_entries(emulator, log, lambda found: {
        'LoginFailed', 'SessionCreated'} <= {
        e['Message'].split(':')[0] for e in found})
    failed = [e for e in shown if e['Message'].startswith('LoginFailed')]
    assert failed[-1]['Severity'] == 'Warning'
    assert "user 'victim'" in failed[-1]['Message']

    # a second failure reaches the threshold: the account is locked
    requests.get(emulator.url + manager, auth=(VICTIM, 'wrong'), timeout=30)
    wait_entries(emulator, log, lambda found: any(
        e['Message'].startswith('AccountLockedOut') for e in found))

    answer = requests.post(emulator.url + clear, auth=AUTH, timeout=30)
    assert answer.status_code == 204, answer.text
    shown = entries(emulator, log)
    assert [e['Message'].split(':')[0] for e in shown] == [
        'RedfishLogCleared']
    assert 'cleared by admin' in shown[0]['Message']


def test_the_simulator_records_kubevirt_events(sim, emulator):
    system = '/redfish/v1/Systems/%s' % identity.firmware_uuid(
        harness.vm(sim, 'vm-00001'))
    log = system + '/LogServices/Log'
    reset = system + '/Actions/ComputerSystem.Reset'
    for kind, wanted in (('On', {'SuccessfulCreate', 'Started'}),
                         ('ForceOff', {'SuccessfulDelete', 'Stopped'})):
        if kind == 'On' and get(emulator, system)['PowerState'] == 'On':
            continue
        answer = requests.post(emulator.url + reset, json={
            'ResetType': kind}, auth=AUTH, timeout=30)
        assert answer.status_code in (200, 204), answer.text
        wait_entries(emulator, log, lambda found, w=wanted: w <= {
            e['Message'].split(':')[0] for e in found})
    messages = [e['Message'] for e in entries(emulator, log)]
    assert 'Started: VirtualMachineInstance started.' in messages
    assert any(m.startswith('SuccessfulCreate: Started the virtual machine '
                            'by creating the new virtual machine instance '
                            'vm-00001') for m in messages)
