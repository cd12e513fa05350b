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

"""The sync-at-scale benchmark runs end to end in both modes."""

import json
import subprocess
import sys

import pytest


@pytest.mark.timeout(120)
def test_bench_syncscale():
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.syncscale',
         '--vms', '200', '--namespaces', '4', '--timeout', '60'],
        capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    modes = dict(line.split(': ', 1) for line in done.stdout.splitlines()
                 if line.startswith(('cluster: ', 'namespaces: ')))
    for mode, scopes in (('cluster', 1), ('namespaces', 4)):
        result = json.loads(modes[mode])
        assert result['synced']
        # One page each (200 VMs < 500), no 410 with this little churn.
        assert result['lists']['virtualmachines'] == {
            'calls': scopes, 'gone': 0}
        assert result['rss_peak_kib'] >= result['rss_steady_kib'] > 0
