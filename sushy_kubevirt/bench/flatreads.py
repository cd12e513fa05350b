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

"""A System GET with many namespaces against one with one namespace.

``python -m sushy_kubevirt.bench.flatreads``: two worker processes, each
an in-process simulator and the emulator's Flask app serving its
namespaces by name (one watch cache per namespace): ``--small`` VMs in
one namespace, ``--large`` VMs in ``--namespaces`` namespaces. They take
turns for ``--rounds`` rounds of ``--requests`` warm ``GET
/redfish/v1/Systems/{id}`` each, through Flask's test client (no
sockets), cycling over Systems of every namespace.

Prints each side's median wall time per GET over every turn, their
ratio, and the exact index probes and Kubernetes API calls per GET.
Exits 1 when the ratio exceeds ``--max-ratio`` or the large side makes
more probes or calls per GET than the small one.
"""

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

from sushy_tools.emulator import main as emulator

from sushy_kubevirt import files
from sushy_kubevirt.kube import indices
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import Simulator

#: Systems each side cycles over (spread over its namespaces).
SAMPLE = 100


def _counting(counts):
    """Count :meth:`Indices.keys` calls (index probes) in ``counts``."""
    keys = indices.Indices.keys

    def counted(self, index, value):
        counts['probes'] += 1
        return keys(self, index, value)
    indices.Indices.keys = counted


def _paths(sim, names):
    """GET paths of up to :data:`SAMPLE` Systems, from every namespace."""
    vms = sim.store.resource('kubevirt.io', 'virtualmachines')
    per = max(1, SAMPLE // len(names))
    found = []
    for ns in names:
        found += sim.store.list(vms, ns)[0][:per]
    return ['/redfish/v1/Systems/' + identity.firmware_uuid(vm)
            for vm in found[:SAMPLE]]


def _worker(conn, vms, namespaces, workdir):
    """One side: answer each ``requests`` count with its timings."""
    started = time.monotonic()
    sim = Simulator(vms=vms, namespaces=namespaces,
                    tls=False).start()
    seeded = time.monotonic() - started
    names = objects.namespace_names(namespaces)
    path = os.path.join(workdir, 'emulator-%d.conf' % namespaces)
    settings = {
        'SUSHY_EMULATOR_STATE_DIR': workdir,
        'SUSHY_EMULATOR_SYSTEMS_DRIVER': 'kubevirt',
        'SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG': sim.write_kubeconfig(
            os.path.join(workdir, 'kubeconfig-%d' % namespaces)),
        'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES': names}
    files.replace(path, 'import sushy_kubevirt.plugin  # noqa\n' + ''.join(
        '%s = %r\n' % item for item in sorted(settings.items())))
    app = emulator.app
    app.configure(config_file=path)
    client = app.test_client()
    paths = _paths(sim, names)
    started = time.monotonic()
    while client.get(paths[0]).status_code != 200:
        time.sleep(0.2)
    if not app.systems.cluster.wait_for_sync(1800):
        raise RuntimeError('the watch caches never synced')
    synced = time.monotonic() - started
    counts = {'probes': 0}
    _counting(counts)
    # Twice: the first GET keeps the answer, the second the ETag's
    # generation (drivers.etagmemo); warm GETs then look nothing up.
    for each in paths + paths:
        assert client.get(each).status_code == 200, each
    conn.send({'seed_s': seeded, 'sync_s': synced})
    turn = 0
    while True:
        requests = conn.recv()
        if requests is None:
            break
        sim.request_log.clear()
        counts['probes'] = 0
        times = []
        for number in range(requests):
            each = paths[(turn + number) % len(paths)]
            began = time.perf_counter()
            client.get(each)
            times.append(time.perf_counter() - began)
        turn += requests
        calls = [e for e in sim.request_log.entries()
                 if e.get('verb') != 'watch']
        conn.send({'times': times, 'probes': counts['probes'] / requests,
                   'calls': len(calls) / requests})
    app.systems.cluster.stop()
    sim.stop()
    conn.close()


def _start(vms, namespaces, workdir):
    context = multiprocessing.get_context('fork')
    mine, theirs = context.Pipe()
    proc = context.Process(target=_worker,
                           args=(theirs, vms, namespaces, workdir),
                           daemon=True)
    proc.start()
    return proc, mine


def measure(small, large, namespaces, requests, rounds, log=print):
    """The figures of both sides, as a JSON-ready dict."""
    workdir = tempfile.mkdtemp(prefix='sushy-kubevirt-flatreads-')
    sides = {'small': (small, 1), 'large': (large, namespaces)}
    workers, ready = {}, {}
    try:
        for side, (vms, count) in sides.items():
            log('%s: %d VMs in %d namespace(s)...' % (side, vms, count))
            workers[side] = _start(vms, count, workdir)
            ready[side] = workers[side][1].recv()
            log('  seeded in %.0f s, synced in %.0f s'
                % (ready[side]['seed_s'], ready[side]['sync_s']))
        times = {side: [] for side in sides}
        made = {}
        for turn in range(rounds):
            order = list(sides) if turn % 2 == 0 else list(sides)[::-1]
            for side in order:
                conn = workers[side][1]
                conn.send(requests)
                answer = conn.recv()
                times[side] += answer['times']
                made[side] = answer
    finally:
        for proc, conn in workers.values():
            conn.send(None)
            proc.join(60)
    p50 = {side: statistics.median(times[side]) for side in sides}
    return {'requests': requests, 'rounds': rounds,
            'ratio': round(p50['large'] / p50['small'], 3),
            'sides': {side: {
                'vms': vms, 'namespaces': count,
                'p50_ms': round(p50[side] * 1000, 3),
                'probes_per_get': made[side]['probes'],
                'calls_per_get': made[side]['calls'],
                'seed_s': round(ready[side]['seed_s'], 1),
                'sync_s': round(ready[side]['sync_s'], 1)}
                for side, (vms, count) in sides.items()}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--small', type=int, default=1000,
                        help='VMs of the one-namespace side')
    parser.add_argument('--large', type=int, default=100_000,
                        help='VMs of the many-namespace side')
    parser.add_argument('--namespaces', type=int, default=100,
                        help='namespaces of the large side')
    parser.add_argument('--requests', type=int, default=500)
    parser.add_argument('--rounds', type=int, default=6)
    parser.add_argument('--max-ratio', type=float, default=1.2)
    parser.add_argument('--output', help='also write the figures there')
    args = parser.parse_args(argv)
    figures = measure(args.small, args.large, args.namespaces,
                      args.requests, args.rounds)
    print('%-6s %8s %10s %10s %12s %10s' % (
        'side', 'VMs', 'namespaces', 'p50 ms', 'probes/GET', 'calls/GET'))
    for side, row in figures['sides'].items():
        print('%-6s %8d %10d %10.3f %12.2f %10.2f' % (
            side, row['vms'], row['namespaces'], row['p50_ms'],
            row['probes_per_get'], row['calls_per_get']))
    print('ratio of the p50s (large / small): %.3f (at most %.2f)'
          % (figures['ratio'], args.max_ratio))
    if args.output:
        files.replace(args.output, json.dumps(figures, indent=1))
    small, large = figures['sides']['small'], figures['sides']['large']
    wrong = [what for what in ('probes_per_get', 'calls_per_get')
             if large[what] > small[what]]
    if figures['ratio'] > args.max_ratio:
        wrong.append('ratio')
    if wrong:
        print('failed: %s' % ', '.join(wrong))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
