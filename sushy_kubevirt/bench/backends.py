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

"""The emulator on the simulator and on a real kube-apiserver, side by side.

``python -m sushy_kubevirt.bench.backends --vms N --namespaces M`` starts,
for each backend in turn, the cluster with N VMs (``targets``) and this
driver under gunicorn as Ironic's devstack runs it (2 workers x 2
threads, cluster-wide: no namespace list), and measures the seeding, each
worker's sync (``workers``), RSS per VM, warm ``GET /Systems/{id}``
latency and the Kubernetes API calls per GET and per Reset (from the
cluster's request log: the real server's audit log). ``--faults`` then
restarts the API server, compacts it and revokes the emulator's RBAC under
a light load (``outages``). A table is printed; ``--json`` keeps it all.
Everything binds 127.0.0.1 and every loop is bounded.
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

from sushy_kubevirt.bench import emulators
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import measure
from sushy_kubevirt.bench import outages
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import sidebyside
from sushy_kubevirt.bench import targets
from sushy_kubevirt.bench import workers as workers_mod
from sushy_kubevirt import files

RESET = '/redfish/v1/Systems/%s/Actions/ComputerSystem.Reset'


def start_emulator(target, workdir):
    """gunicorn, 2 workers x 2 threads, cluster-wide; ``(emulator, s)``."""
    port = procs.free_port()
    name = 'gunicorn-%s-%d' % (target.name, port)
    config = emulators.write_config(
        os.path.join(workdir, name + '.conf'), port, 'kubevirt',
        kubeconfig=target.emulator_kubeconfig(), namespaces=None)
    started = time.monotonic()
    emu = emulators.Emulator('gunicorn', 'kubevirt', config, port,
                             os.path.join(workdir, name + '.log'))
    try:
        emu.wait_ready()
    except BaseException:
        emu.stop()
        raise
    return emu, round(time.monotonic() - started, 3)


def _listed(workers, pid):
    status, body = workers.request(pid, '/redfish/v1/Systems')
    return json.loads(body).get('Members@odata.count') if status == 200 \
        else None


def _sync_one(workers, pid, vms, started, deadline_s, out):
    """First GET /Systems on worker ``pid``, then poll its sync."""
    elapsed = (lambda: round(time.monotonic() - started, 3))
    out['first_count'] = _listed(workers, pid)
    out['first_answer_s'] = elapsed()
    while time.monotonic() - started < deadline_s:
        if 'synced_s' not in out and workers_mod.synced(workers.metrics(pid)):
            out['synced_s'] = elapsed()
        if 'synced_s' in out and _listed(workers, pid) == vms and \
                _listed(workers, pid) == vms:
            out['listed_s'] = elapsed()
            return
        time.sleep(0.2)


def sync(target, emu, workers, vms, deadline_s):
    """Each worker's sync, from its first request; then a quiet check."""
    pids = workers.connect()
    idle = workers.rss_kb()
    per = {pid: {} for pid in pids}
    started = time.monotonic()
    threads = [threading.Thread(target=_sync_one, args=(
        workers, pid, vms, started, deadline_s, per[pid])) for pid in pids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = measure.system_ids(emu.port)[:10]
    since = time.time()
    for pid in pids:
        for system in ids:
            workers.request(pid, '/redfish/v1/Systems/%s' % system)
    done = [w.get('listed_s') for w in per.values()]
    return {'workers': {str(pid): w for pid, w in per.items()},
            'sync_s': None if None in done else max(done),
            'quiet_calls': target.calls(since),
            'rss_idle_kb': idle}


def warm_gets(target, port, ids, requests, parallel):
    """Warm GET /Systems/{id}: latency and the API calls they made."""
    since = time.time()
    result = load.spawn_run({
        'port': port, 'systems': ids, 'workload': 'get_system',
        'requests': requests, 'parallel': parallel, 'seconds': 300,
        'timeout': 30})
    total = result['total']
    calls = target.calls(since)
    total['api_calls'] = calls
    total['api_calls_per_request'] = round(
        sum(calls.values()) / total['requests'], 3) if total['requests'] \
        else None
    total['statuses'] = result['kinds']['get_system']['statuses']
    total['loadavg'] = [round(x, 2) for x in os.getloadavg()]
    return total


def resets(target, port, nodes, pause_s=1.0):
    """``On`` then ``ForceOff`` on each node; API calls per request."""
    client = load.Client(port, keepalive=False, timeout=60.0)
    per_kind = {}
    for node in nodes:
        for kind in ('On', 'ForceOff'):
            since = time.time()
            status, _ = client.send('POST', RESET % node,
                                    {'ResetType': kind})
            calls = target.calls(since, time.time())
            entry = per_kind.setdefault(kind, {'statuses': {}, 'calls': [],
                                               'by_call': {}})
            entry['statuses'][str(status)] = \
                entry['statuses'].get(str(status), 0) + 1
            entry['calls'].append(sum(calls.values()))
            for key, n in calls.items():
                entry['by_call'][key] = entry['by_call'].get(key, 0) + n
            time.sleep(pause_s)
    for entry in per_kind.values():
        count = len(entry['calls'])
        entry['mean'] = round(sum(entry['calls']) / count, 2)
        entry['max'] = max(entry['calls'])
        entry['by_call'] = {k: round(n / count, 2)
                            for k, n in sorted(entry['by_call'].items())}
    return per_kind


def run_backend(backend, args, workdir):
    """Every figure of one backend (the cluster is stopped at the end)."""
    target = targets.make(backend, args.vms, args.namespaces, workdir,
                          time_scale=args.time_scale)
    result = {'backend': backend, 'vms': args.vms,
              'namespaces': args.namespaces}
    print('%s: starting with %d VMs in %d namespace(s)...'
          % (backend, args.vms, args.namespaces), flush=True)
    try:
        result['start'] = target.start()
        result['start']['loadavg'] = [round(x, 2) for x in os.getloadavg()]
        print('%s: started %s' % (backend, result['start']), flush=True)
        emu, result['emulator_ready_s'] = start_emulator(target, workdir)
        workers = workers_mod.Workers(emu.port, emu.proc.pid)
        try:
            result['sync'] = sync(target, emu, workers, args.vms,
                                  args.sync_deadline)
            print('%s: synced in %s s' % (backend, result['sync']['sync_s']),
                  flush=True)
            ids = measure.system_ids(emu.port)
            result['warm_get'] = warm_gets(target, emu.port, ids, args.gets,
                                           args.threads)
            steady = workers.rss_kb()
            idle = result['sync']['rss_idle_kb']
            result['rss'] = {
                'workers_kb': steady,
                'kb_per_vm': round(sum(steady[p] - idle.get(p, 0)
                                       for p in steady)
                                   / len(steady) / max(1, args.vms), 2)}
            nodes = [target.node_id(args.vms - 1 - i)
                     for i in range(min(args.resets, args.vms))]
            result['resets'] = resets(target, emu.port, nodes,
                                      args.reset_pause)
            if args.faults:
                print('%s: faults...' % backend, flush=True)
                result['faults'] = outages.run(target, emu.port, workers,
                                               ids, args)
        finally:
            workers.close()
            emu.stop()
            result['emulator_log'] = procs.log_tail(emu.log_path, 3000)
    finally:
        target.stop()
    return result


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench.backends', description=__doc__)
    add = parser.add_argument
    add('--vms', type=int, default=1000)
    add('--namespaces', type=int, default=10)
    add('--backends', default='simulator,kube-apiserver',
        help='comma-separated: %s (kubevirt builds KubeVirt and CDI '
        'first)' % ', '.join(targets.BACKENDS))
    add('--gets', type=int, default=2000, help='warm GETs')
    add('--threads', type=int, default=4, help='client threads of the GETs')
    add('--resets', type=int, default=3,
        help='nodes reset On then ForceOff, one request at a time')
    add('--reset-pause', type=float, default=1.0,
        help='seconds between two resets (the power transition)')
    add('--time-scale', type=float, default=1.0)
    add('--sync-deadline', type=float, default=900.0)
    add('--faults', action='store_true',
        help='then restart the API server, compact it, revoke the RBAC')
    outages.add_arguments(add)
    add('--json', metavar='OUT', help='write every figure here')
    add('--workdir', help='keep configs and logs here (default: temp)')
    args = parser.parse_args(argv)
    args.backends = [b for b in args.backends.split(',') if b]
    bad = set(args.backends) - set(targets.BACKENDS)
    if bad:
        parser.error('unknown backend(s): %s' % ', '.join(sorted(bad)))
    if args.vms < 1:
        parser.error('--vms must be at least 1')
    return args


def main(argv=None):
    args = parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix='skv-backends-')
    os.makedirs(workdir, exist_ok=True)
    document = {'argv': sys.argv[1:], 'nproc': os.cpu_count(),
                'loadavg_start': os.getloadavg(), 'runs': []}
    for backend in args.backends:
        document['runs'].append(run_backend(backend, args, workdir))
        if args.json:
            files.replace(args.json, json.dumps(document, indent=1,
                                                sort_keys=True))
    document['loadavg_end'] = os.getloadavg()
    print(sidebyside.render(document['runs']))
    if args.json:
        files.replace(args.json, json.dumps(document, indent=1,
                                            sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
