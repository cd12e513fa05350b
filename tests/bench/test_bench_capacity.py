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

"""The capacity benchmark runs end to end on a tiny cluster.

No time is asserted: one closed and one open step of a second each on
one worker of either backend answer without error, the open loop sends
exactly its arrivals' requests, and the record stays out of the gate.
Pinned (the default on 2 CPUs), each emulator runs on the last CPU and
the record is of kind ``capacity-fair``; ``--no-pin`` keeps the kind of
the earlier, unpinned records.
"""

import json
import os
import subprocess
import sys

import pytest

from sushy_kubevirt.bench import history

#: 20 arrivals of Ironic's mix: 16 System GETs, 2 SecureBoot GETs, a boot
#: PATCH pair, a vmedia insert and eject.
OPEN_KINDS = {'get_system', 'get_secureboot', 'boot_patch', 'vmedia_insert',
              'vmedia_eject'}


PINNED = len(os.sched_getaffinity(0)) > 1


@pytest.mark.timeout(240)
@pytest.mark.parametrize('pin', ['--pin', '--no-pin'])
def test_bench_capacity(tmp_path, pin):
    output, records = tmp_path / 'capacity.json', tmp_path / 'h.jsonl'
    # The pinned run also raises this driver's API-call rate limit.
    qps = ['--qps', '500'] if pin == '--pin' else []
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.capacity',
         '--vms', '50', '--namespaces', '1', '--workers', '1',
         '--clients', '1', '--rate', '20', '--rate-steps', '1',
         '--seconds', '1', '--profile-seconds', '0', '--warm-deadline',
         '60', '--output', str(output), '--history', str(records), pin,
         '--trend', str(tmp_path / 'trend.png'),
         '--workdir', str(tmp_path / 'work')] + qps,
        capture_output=True, text=True, timeout=230, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'kubevirt req/s' in done.stdout

    document = json.loads(output.read_text())
    pinned = pin == '--pin' and PINNED
    last = max(os.sched_getaffinity(0))
    assert document['emulator_cpus'] == ([last] if pinned else [])
    assert document['kind'] == ('capacity-fair' if pinned else 'capacity')
    runs = {run['driver']: run for run in document['runs']}
    assert sorted(runs) == ['fake', 'kubevirt']
    for run in runs.values():
        assert run['workers'] == 1 and run['vmedia']
        if pinned:
            assert run['affinity'] == [last]
        closed, = run['steps']['closed']
        opened, = run['steps']['open']
        for step in (closed, opened):
            assert step['errors'] == 0, step['failures']
            assert step['rps'] > 0
            assert step['p50_ms'] <= step['p99_ms']
            assert step['cpu_ms'] > 0
        if not opened['dropped']:   # none, unless the machine stalls
            assert opened['requests'] == 22
            assert set(opened['kinds_p99_ms']) == OPEN_KINDS

    entry, = [json.loads(line) for line in records.read_text().splitlines()]
    assert entry['kind'] == document['kind'] and entry['errors'] == 0
    assert 'ratios' not in entry and 'calls' not in entry
    figures = entry['figures']
    assert figures['vms'] == 50
    assert figures['api qps'] == (500 if qps else 20)
    configs = {p.name.split('-')[1]: p.read_text()
               for p in (tmp_path / 'work').glob('gunicorn-*.conf')}
    assert sorted(configs) == ['fake', 'warm']
    assert ('SUSHY_EMULATOR_KUBEVIRT_QPS = 500' in configs['warm']) == \
        bool(qps)
    assert 'SUSHY_EMULATOR_KUBEVIRT_QPS' not in configs['fake']
    for mode in ('closed', 'open'):
        ours = figures['kubevirt 1w %s CPU ms/request' % mode]
        fake = figures['fake 1w %s CPU ms/request' % mode]
        assert figures['fake/kubevirt 1w %s CPU' % mode] == round(
            fake / ours, 2)
    assert history.load(str(records)) == []
    assert (tmp_path / 'trend.png').read_bytes()[:4] == b'\x89PNG'
