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

"""The benchmark harness runs end to end with tiny numbers.

No timing is asserted: only that every process starts, every workload
completes without errors, and the API-call accounting tells the warm
cache (no call per GET) from the live-read path (calls per GET).
"""

import json
import subprocess
import sys

import pytest


@pytest.mark.timeout(120)
def test_bench_smoke(tmp_path):
    output = tmp_path / 'bench.json'
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench',
         '--vms', '3', '--namespaces', '1', '--servers', 'devserver',
         '--workloads', 'ironic,mixed', '--latency-ms', '0',
         '--rounds', '1', '--parallel', '1', '--seconds', '2',
         '--calls', '1', '--lag-samples', '1', '--warm-deadline', '20',
         '--output', str(output)],
        capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'Kubernetes API calls per Redfish request' in done.stdout

    document = json.loads(output.read_text())
    runs = {run['mode']: run for run in document['runs']}
    assert sorted(runs) == ['fake', 'live', 'warm']
    for run in runs.values():
        for name, result in run['workloads'].items():
            assert result['total']['requests'] > 0, (run['mode'], name)
            assert result['total']['errors'] == 0, result['failures']
    assert runs['warm']['calls']['get_system']['total'] == 0
    assert runs['live']['calls']['get_system']['total'] > 0
    assert runs['warm']['lag_s'][0] is not None
    assert document['machine']['nproc']
