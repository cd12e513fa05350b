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

"""The access benchmark runs end to end and counts the calls it should."""

import json
import subprocess
import sys

import pytest


@pytest.mark.timeout(120)
def test_bench_access(tmp_path):
    output = tmp_path / 'access.json'
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.access', '--vms', '4',
         '--requests', '20', '--rounds', '1', '--output', str(output)],
        capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    modes = json.loads(output.read_text())['modes']
    assert modes['kubernetes']['calls_per_request'] == {}
    assert modes['session']['calls_per_request'] == {}
    assert modes['kubernetes, ttl 0']['calls_per_request'] == {
        'create tokenreviews': 1, 'create subjectaccessreviews': 2}
