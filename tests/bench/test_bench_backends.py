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

"""``bench.backends`` end to end, tiny, on the simulator backend only.

No timing is asserted: every worker syncs, warm GETs make no API call,
a Reset makes some, and under the faults reads keep answering from the
cache while writes answer 503 (API server down) or 500 naming the missing
permission (RBAC revoked), and everything works again afterwards.
"""

import json
import subprocess
import sys

import pytest


@pytest.mark.timeout(90)
def test_backends_simulator_with_faults(tmp_path):
    output = tmp_path / 'backends.json'
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.backends',
         '--vms', '6', '--namespaces', '2', '--backends', 'simulator',
         '--gets', '100', '--resets', '1', '--reset-pause', '0.3',
         '--faults', '--down', '1', '--fault-window', '2', '--burst', '3',
         '--load-threads', '2', '--settle', '3.2',
         '--recovery-deadline', '30', '--sync-deadline', '30',
         '--json', str(output), '--workdir', str(tmp_path)],
        capture_output=True, text=True, timeout=85, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert 'informers synced s, per worker' in done.stdout
    assert 'Faults on simulator' in done.stdout

    run, = json.loads(output.read_text())['runs']
    assert run['backend'] == 'simulator'
    workers = run['sync']['workers']
    assert len(workers) == 2
    assert all(w['listed_s'] is not None for w in workers.values())
    assert run['sync']['quiet_calls'] == {}
    warm = run['warm_get']
    assert warm['requests'] == 100 and warm['errors'] == 0
    assert warm['api_calls_per_request'] == 0
    assert run['resets']['On']['statuses'] == {'204': 1}
    assert run['resets']['On']['mean'] >= 1

    faults = run['faults']
    for name in ('restart', 'compaction', 'rbac'):
        assert 'error' not in faults[name], faults[name]
    restart = faults['restart']
    assert set(restart['outage']['GET System']['statuses']) == {'200'}
    outage_writes = {code for kind, entry in restart['outage'].items()
                     if kind.startswith('Reset')
                     for code in entry['statuses']}
    assert outage_writes <= {'503', '204'}, restart['outage']
    assert restart['reset_works_s'] is not None
    assert None not in restart['visible_s']['workers'].values()
    compaction = faults['compaction']
    assert all(w['missing'] == 0 for w in compaction['converged'].values())
    rbac = faults['rbac']
    assert set(rbac['revoked_cached']['GET System']['statuses']) == {'200'}
    status, _, message, _ = rbac['single_after_window']['Reset On']
    # Every permission revoked: the write is a 503 (namespace forbidden).
    assert status == 503 and 'lacks the RBAC permission' in message
    assert rbac['reset_works_s'] is not None
    assert rbac['synced_s'] is not None
