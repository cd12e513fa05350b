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

"""``/healthz`` over HTTP: the watch cache's sync, open without auth."""

import re

import bcrypt
import requests
from tests import backend
from tests.functional.emulator import harness

#: The informers' first list (paginated, limit=500): holding it keeps the
#: cache unsynced.
INFORMER_LIST = {'method': 'GET', 'query': {'limit': '500'},
                 'path': r'/(virtualmachines|virtualmachineinstances|'
                         r'datavolumes)$'}


def emulator_config(sim, tmp_path):
    auth_file = tmp_path / 'htpasswd'
    auth_file.write_text('admin:%s\n' % bcrypt.hashpw(
        b'password', bcrypt.gensalt(4)).decode())
    return harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kubeconfig')),
        SUSHY_EMULATOR_AUTH_FILE=str(auth_file))


def healthz(server):
    answer = requests.get(server.url + '/healthz', timeout=30)
    assert answer.headers['Content-Type'] == 'application/json'
    assert answer.status_code in (200, 503), answer.text
    return answer.status_code, answer.json()


def test_synced_is_200_without_auth_and_no_api_call(tmp_path):
    sim = backend.start(vms=2)
    try:
        with harness.InProcess(emulator_config(sim, tmp_path)) as server:
            assert requests.get(server.url + '/redfish/v1/Systems',
                                timeout=30).status_code == 401
            harness.wait_until(lambda: healthz(server)[0] == 200, 30, 0.1,
                               '/healthz 200')
            backend.log_complete(sim)
            sim.request_log.clear()
            status, body = healthz(server)
            # VMs, VMIs, DataVolumes (and more) of every namespace.
            assert (status, body['Status']) == (200, 'Synced')
            assert body['Synced'] == body['Informers'] >= 3
            backend.log_complete(sim)
            assert [e for e in harness.api_calls(sim)
                    if e['path'] != '/version'] == []
    finally:
        sim.stop()


@backend.simulator_only('faults')
def test_unsynced_is_503(tmp_path):
    sim = backend.start(vms=2)
    try:
        # Long enough for the first GET; the cache then syncs.
        sim.faults.latency(5, **INFORMER_LIST)
        with harness.InProcess(emulator_config(sim, tmp_path)) as server:
            status, body = healthz(server)
            assert status == 503
            [info] = body['error']['@Message.ExtendedInfo']
            assert info['MessageId'].startswith('Base.')
            assert info['MessageId'].endswith('.ServiceTemporarilyUnavailable')
            synced, informers = map(int, re.search(
                r'not synced: (\d+) of (\d+) informers have',
                body['error']['message']).groups())
            assert synced < informers
            harness.wait_until(lambda: healthz(server)[0] == 200, 30, 0.1,
                               '/healthz 200 once the lists are in')
    finally:
        sim.stop()
