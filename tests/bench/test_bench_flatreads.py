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

"""The flat-reads benchmark runs end to end and counts the same probes."""

import json
import subprocess
import sys

import pytest


@pytest.mark.timeout(120)
def test_bench_flatreads(tmp_path):
    output = tmp_path / 'flatreads.json'
    # The time ratio of so few VMs is noise: only the counts are checked.
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.flatreads',
         '--small', '4', '--large', '40', '--namespaces', '20',
         '--requests', '20', '--rounds', '2', '--max-ratio', '1000',
         '--output', str(output)],
        capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    sides = json.loads(output.read_text())['sides']
    for side in sides.values():
        # Warm and unchanged: the process keeps each System's ETag.
        assert side['probes_per_get'] == 0
        assert side['calls_per_get'] == 0
    assert sides['large']['namespaces'] == 20
