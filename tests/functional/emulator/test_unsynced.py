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

"""Before the watch cache syncs, reads go live: once per object per GET."""

import collections

import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kube import lister
from sushy_kubevirt.kubevirt import identity

#: The informers' first list is paginated (limit=500, the reflector's
#: page size); holding it keeps the cache unsynced.
INFORMER_LIST = {'method': 'GET', 'query': {'limit': '500'},
                 'path': r'/(virtualmachines|virtualmachineinstances|'
                         r'datavolumes)$'}

#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


def test_unsynced_get_reads_each_object_once(tmp_path, monkeypatch):
    # The lookup waits 0.5 s for the held list, then reads live.
    monkeypatch.setattr(lister, 'LIST_PROGRESS_S', 0.5)
    sim = backend.start(vms=3)
    server = None
    try:
        # Long enough for one GET; stop() then waits for the held list.
        sim.faults.latency(5, **INFORMER_LIST)
        config = harness.write_config(
            tmp_path / 'emulator.conf',
            sim.write_kubeconfig(str(tmp_path / 'kubeconfig')))
        server = harness.InProcess(config).start()
        uuid = identity.firmware_uuid(harness.vm(sim, 'vm-00001'))
        url = '%s/redfish/v1/Systems/%s' % (server.url, uuid)
        sim.request_log.clear()
        response = requests.get(url, timeout=30)
        assert response.status_code == 200, response.text
        assert response.json()['UUID'] == uuid
        calls = collections.Counter(
            '%s %s' % (e['verb'], e['resource'])
            for e in harness.api_calls(sim)
            if e['query'].get('limit') != '500')
        # Without the per-request snapshot every driver method read the VM
        # (and VMI) again: 21 calls.
        # The DataVolume is the root disk's (SimpleStorage capacity).
        assert calls == {'list virtualmachines': 1,
                         'get virtualmachines': 1,
                         'get virtualmachineinstances': 1,
                         'get datavolumes': 1}
    finally:
        if server is not None:
            server.stop()
        sim.stop()
