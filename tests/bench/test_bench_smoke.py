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


#: 120 requests a run: the CPU a run used is read in clock ticks (10 ms),
#: and 15 warm GETs can take less than one, which leaves no CPU ratio.
QUICK_FAST = ['--quick', '--vms', '3', '--namespaces', '1', '--pairs', '1',
              '--rounds', '8', '--calls', '1', '--scale', '20',
              '--live-seconds', '1', '--seconds', '2',
              '--warm-deadline', '20']


def _bench(*argv, timeout=110):
    return subprocess.run([sys.executable, '-m', 'sushy_kubevirt.bench']
                          + list(argv), capture_output=True, text=True,
                          timeout=timeout, check=False)


#: A quick run on a loaded 2-core machine (load average 40) takes up to
#: about two minutes, and up to another for the cluster of
#: bench.expandcost.VMS VMs it seeds.
QUICK_TIMEOUT = 260


@pytest.mark.timeout(2 * QUICK_TIMEOUT + 60)
def test_quick_appends_records_and_plots(tmp_path):
    history = tmp_path / 'history.jsonl'
    done = _bench(*QUICK_FAST, '--output', str(tmp_path / 'q.json'),
                  '--history', str(history), timeout=QUICK_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'record appended' in done.stdout
    # The second run is gated against a history in which a reset cost
    # less than it does: the gate fails it (and --history still appends).
    cheaper = json.loads(history.read_text())
    cheaper['calls']['warm reset'] -= 0.5
    gate = tmp_path / 'gate.jsonl'
    gate.write_text(json.dumps(cheaper) + '\n')
    done = _bench(*QUICK_FAST, '--output', str(tmp_path / 'q.json'),
                  '--history', str(history), '--gate', str(gate),
                  timeout=QUICK_TIMEOUT)
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert "API calls 'warm reset'" in done.stdout
    assert 'record appended' in done.stdout
    records = [json.loads(line) for line in history.read_text().splitlines()]
    assert len(records) == 2
    first, second = records
    for record in records:
        assert len(record['commit']) == 40
        assert record['machine']['nproc'] and record['machine']['python']
        assert record['errors'] == 0, record['failures']
        assert set(record['ratios']) == {
            'warm/fake get per CPU s', 'warm/fake poll per CPU s',
            'warm/fake capacity per CPU s', 'warm/ceiling get per CPU s',
            'refused $expand/warm get per CPU s'}
        # Ironic's capacity mix wrote, and left every object as found.
        assert record['figures']['capacity vmedia'] is True
        assert record['figures']['capacity objects not as found'] == 0
        assert all(v > 0 for v in record['ratios'].values())
        assert record['figures']['scale 20 KB/VM'] is not None
        assert record['figures']['get warm p99 ms'] > 0
    # The counts are exact: two runs agree, the cache serves every read.
    assert first['calls'] == second['calls']
    assert first['calls']['warm get_system'] == 0
    assert first['calls']['warm poll (load)'] == 0
    assert first['calls']['live get_system'] > 0
    assert first['calls']['warm reset'] > 0

    plot = tmp_path / 'trend.png'
    plotting = '--plot' if _has_matplotlib() else '--window'
    done = _bench('history', str(history), plotting,
                  str(plot) if plotting == '--plot' else '5')
    # Ratios of so short a run are noise: either verdict is possible,
    # but the API calls never regress.
    assert done.returncode in (0, 3), done.stderr
    assert "API calls '" not in done.stdout, done.stdout
    if plotting == '--plot':
        assert plot.read_bytes()[:4] == b'\x89PNG'


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.timeout(120)
def test_events_bench_smoke():
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.events', '--vms', '20',
         '--rate', '0.1', '--seconds', '2', '--events', '200',
         '--timeout', '60'],
        capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result['workers_joined'] == 2
    assert result['latency']['changes'] == 4
    assert result['latency']['p99_ms'] > 0
    once = result['exactly_once']
    assert (once['unique'], once['duplicates'], once['losses']) == (
        200, 0, 0)
