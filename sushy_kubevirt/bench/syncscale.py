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

"""The watch caches' first sync at scale: time, memory and list calls.

``python -m sushy_kubevirt.bench.syncscale``: an in-process simulator
seeds ``--vms`` VMs (with their DataVolumes) in ``--namespaces``
namespaces and keeps ``--history`` events; a thread changes ``--churn``
of the VMs a second. For each mode (``cluster``: one cache per resource
for every namespace; ``namespaces``: one per namespace), a fresh process
(spawned: it shares no memory with the simulator) builds a ``Cluster``
with DataVolumes and waits for every cache to sync.

Prints, per mode, the sync time, the list calls per resource (and the
410s among them), the client's RSS before the caches, once synced
(steady, after a garbage collection) and at its peak (VmHWM), and the
steady RSS per VM. Not run in CI.
"""

import argparse
import gc
import json
import multiprocessing
import os
import random
import tempfile
import threading
import time

from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import Simulator

MODES = ('cluster', 'namespaces')


def _rss_kib():
    """(VmRSS, VmHWM) of this process, in KiB."""
    values = {}
    with open('/proc/self/status') as status:
        for line in status:
            key, _, rest = line.partition(':')
            if key in ('VmRSS', 'VmHWM'):
                values[key] = int(rest.split()[0])
    return values['VmRSS'], values['VmHWM']


def _client(conn, kubeconfig, names, timeout):
    """The measured side: sync every cache, report time and memory."""
    from sushy_kubevirt import config
    from sushy_kubevirt.kube import cluster as cluster_mod
    gc.collect()
    before, _ = _rss_kib()
    cluster = cluster_mod.Cluster(
        config.Settings(kubeconfig=kubeconfig, namespaces=names),
        datavolumes=True)
    started = time.monotonic()
    synced = cluster.wait_for_sync(timeout)
    took = time.monotonic() - started
    gc.collect()
    time.sleep(1.0)
    steady, peak = _rss_kib()
    cluster.stop()
    conn.send({'synced': synced, 'sync_s': took, 'rss_before_kib': before,
               'rss_steady_kib': steady, 'rss_peak_kib': peak})
    conn.close()


def _churn(sim, vms, names, per_s, stop):
    """Change ``per_s`` random VMs a second until ``stop`` is set."""
    rt = sim.store.resource('kubevirt.io', 'virtualmachines')
    rand = random.Random(1)

    def touch(obj):
        labels = obj['metadata'].setdefault('labels', {})
        labels['bench/churn'] = str(rand.randrange(1 << 30))

    interval = 1.0 / per_s if per_s else None
    due = time.monotonic()
    while interval and not stop.wait(max(0.0, due - time.monotonic())):
        i = rand.randrange(vms)
        sim.store.mutate(rt, names[i % len(names)], 'vm-%05d' % i, touch)
        due += interval


def _lists(sim, since):
    """List calls per resource since ``since`` and the 410s among them."""
    out = {}
    for entry in sim.request_log.entries(verb='list'):
        if entry['started'] < since:
            continue
        each = out.setdefault(entry['resource'], {'calls': 0, 'gone': 0})
        each['calls'] += 1
        each['gone'] += entry['status'] == 410
    return out


def measure(vms, namespaces, churn, history, modes, timeout, log=print):
    """Each mode's figures (a dict per mode)."""
    started = time.monotonic()
    sim = Simulator(vms=vms, namespaces=namespaces,
                    history_size=history, tls=False).start()
    log('seeded %d VMs in %d namespaces in %.1f s'
        % (vms, namespaces, time.monotonic() - started))
    names = objects.namespace_names(namespaces)
    stop = threading.Event()
    writer = threading.Thread(target=_churn, daemon=True, args=(
        sim, vms, names, vms * churn, stop))
    writer.start()
    results = {}
    context = multiprocessing.get_context('spawn')
    try:
        with tempfile.TemporaryDirectory() as workdir:
            kubeconfig = str(sim.write_kubeconfig(
                os.path.join(workdir, 'kubeconfig')))
            for mode in modes:
                since = time.time()
                ours, theirs = context.Pipe()
                proc = context.Process(target=_client, args=(
                    theirs, kubeconfig,
                    tuple(names) if mode == 'namespaces' else None, timeout))
                proc.start()
                if not ours.poll(timeout + 120):
                    proc.kill()
                    raise RuntimeError('%s: no answer' % mode)
                result = ours.recv()
                proc.join(30)
                if proc.is_alive():   # still freeing its caches
                    proc.kill()
                    proc.join(10)
                result['lists'] = _lists(sim, since)
                result['steady_kib_per_vm'] = (
                    result['rss_steady_kib'] - result['rss_before_kib']) / vms
                results[mode] = result
                log('%s: %s' % (mode, json.dumps(result, sort_keys=True)))
    finally:
        stop.set()
        writer.join(5)
        sim.stop()
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--vms', type=int, default=100_000)
    parser.add_argument('--namespaces', type=int, default=100)
    parser.add_argument('--churn', type=float, default=0.01,
                        help='share of the VMs changed a second')
    parser.add_argument('--history', type=int, default=10_000,
                        help="the simulator's history (events kept)")
    parser.add_argument('--mode', choices=MODES + ('both',),
                        default='both')
    parser.add_argument('--timeout', type=float, default=300.0)
    args = parser.parse_args(argv)
    modes = MODES if args.mode == 'both' else (args.mode,)
    results = measure(args.vms, args.namespaces, args.churn, args.history,
                      modes, args.timeout)
    return 0 if all(r['synced'] for r in results.values()) else 1


if __name__ == '__main__':
    raise SystemExit(main())
