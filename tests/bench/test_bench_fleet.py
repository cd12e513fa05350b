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

"""The fleet bench end to end on a few VMs of the simulator.

The gate a short run holds: each deploy and BIOS step's Kubernetes API
calls equal the documented minimum (``fleetprobe.EXPECTED``), warm polls
make none, every request and every node's flow succeeds. No time is asserted.
The real control plane's run (``--backend kubevirt``, 1,000 VMs) is
documented in doc/source/benchmarks.rst.
"""

import json
import subprocess
import sys

import pytest

from sushy_kubevirt.bench import fleetprobe
from sushy_kubevirt.bench import history


@pytest.mark.timeout(360)
def test_bench_fleet_simulator(tmp_path):
    output, records = tmp_path / 'fleet.json', tmp_path / 'h.jsonl'
    plot = tmp_path / 'fleet.png'
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.fleet',
         '--backend', 'simulator', '--vms', '12', '--namespaces', '2',
         '--minutes', '0.4', '--warm', '8', '--waves', '2',
         '--wave-size', '2', '--bios', '1', '--wave-every', '4',
         '--poll-period', '6', '--poll-threads', '2', '--pause', '0.3',
         '--node-deadline', '90', '--sync-deadline', '60',
         '--json', str(output), '--history', str(records),
         '--plot', str(plot), '--workdir', str(tmp_path)],
        capture_output=True, text=True, timeout=350, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    assert 'live-reading client' in done.stdout

    document = json.loads(output.read_text())
    steps = document['probe']['steps']
    assert {k: steps[k] for k in fleetprobe.EXPECTED} == fleetprobe.EXPECTED
    drive = document['drive']
    assert drive['warm_polls'] > 0 and document['api']['warm_poll_calls'] == 0
    assert [(w['nodes'], w['on'], w['bios']) for w in drive['waves']] == \
        [(2, 2, 1)] * 2
    assert all(k['errors'] == 0 for k in drive['kinds'].values())
    assert drive['kinds']['boot_once']['requests'] == 4
    costed = document['costed']['total']
    assert costed['live_rps'] > costed['ours_rps'] > 0

    entry, = history.load(str(records), kind='fleet')
    assert entry['errors'] == 0 and entry['figures']['vms'] == 12
    assert entry['calls']['insert'] == 2
    assert history.load(str(records)) == []
    assert plot.read_bytes()[:4] == b'\x89PNG'
