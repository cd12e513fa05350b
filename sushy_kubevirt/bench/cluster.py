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

"""The simulated cluster, in a process the harness owns.

``python -m sushy_kubevirt.bench.cluster --vms N ...`` runs
:class:`sushy_kubevirt.simulator.Simulator` and answers JSON-line commands
on stdin (``counts``, ``informer_lists``, ``settle``, ``hold_sync``,
``release_sync``, ``stop``) so the harness can read the simulator's request
log from another process.
:class:`Cluster` is the harness's side.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

from sushy_kubevirt.bench import procs
from sushy_kubevirt.kubevirt import media


#: The informers' first list is paginated (``limit=500``, the reflector's
#: page size); live reads (``limit=1000``, the lister's) and the start-up
#: check (``limit=1``) are not those. Holding those lists keeps every
#: cache unsynced, so reads go live.
_INFORMER_LIST = {
    'method': 'GET', 'query': {'limit': '500'},
    'path': r'/(virtualmachines|virtualmachineinstances|datavolumes)$'}
_HOLD_S = 3600.0


def _delta(now, before):
    return {'%s %s' % key: n - before.get(key, 0) for key, n in now.items()
            if n != before.get(key, 0)}


def _counts(sim, seen, since):
    """The calls since ``seen`` (counters at wall time ``since``).

    Less the orphan collector's lists of the tray Secrets
    (:mod:`sushy_kubevirt.drivers.orphans`): made in the background, on
    its own schedule, they are no request's cost.
    """
    now, at = sim.request_log.counters(), time.time()
    counts = _delta(now, seen)
    swept = sim.request_log.count(
        verb='list', resource='secrets', started=lambda t: t >= since,
        query=lambda q: media.LABEL_DEVICE in q.get('labelSelector', ''))
    if swept:
        counts['list secrets'] -= swept
        if not counts['list secrets']:
            del counts['list secrets']
    return counts, now, at


def _informer_lists(sim, since):
    """Pages of the informers' first lists that started after ``since``."""
    pages = sim.request_log.entries(
        verb='list', query={'limit': _INFORMER_LIST['query']['limit']},
        started=lambda started: started >= since)
    return {'pages': len(pages),
            'last_end': max((p['started'] + p['duration'] for p in pages),
                            default=None)}


def _settle(sim, quiet_s, deadline_s):
    """Wait until no object has changed for ``quiet_s`` seconds.

    The controllers' stage transitions are then over and every watch has
    had ``quiet_s`` to deliver the last event: the caches of the emulator
    hold what the store holds. Returns the seconds waited, or None at the
    deadline.
    """
    started = time.monotonic()
    rv, since = sim.store.resource_version, started
    while time.monotonic() - started < deadline_s:
        time.sleep(0.02)
        now, current = time.monotonic(), sim.store.resource_version
        if current != rv:
            rv, since = current, now
        elif now - since >= quiet_s:
            return round(now - started, 3)
    return None


def _serve(sim, out):
    held, seen, since = None, sim.request_log.counters(), time.time()
    for line in sys.stdin:
        command = json.loads(line)
        name = command['cmd']
        reply = {}
        if name == 'counts':
            reply['counts'], seen, since = _counts(sim, seen, since)
        elif name == 'informer_lists':
            reply = _informer_lists(sim, command['since'])
        elif name == 'settle':
            reply['waited_s'] = _settle(sim, command['quiet_s'],
                                        command['deadline_s'])
        elif name == 'hold_sync' and held is None:
            held = sim.faults.latency(_HOLD_S, times=None, **_INFORMER_LIST)
        elif name == 'release_sync' and held is not None:
            sim.faults.remove(held)
            held = None
        elif name == 'stop':
            break
        out.write(json.dumps(reply) + '\n')
        out.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(prog='sushy_kubevirt.bench.cluster')
    parser.add_argument('--vms', type=int, default=0)
    parser.add_argument('--namespaces', type=int, default=1)
    parser.add_argument('--latency-ms', type=float, default=0)
    parser.add_argument('--max-qps', type=float, default=None)
    parser.add_argument('--time-scale', type=float, default=1.0)
    parser.add_argument('--kubeconfig', required=True)
    args = parser.parse_args(argv)
    # Replies go to the real stdout; anything printed by the simulator
    # goes to stderr (the log file).
    out = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    sys.stdout = sys.stderr
    from sushy_kubevirt.simulator import command
    from sushy_kubevirt.simulator import Simulator

    started = time.monotonic()
    sim = Simulator(vms=args.vms, namespaces=args.namespaces,
                    latency_ms=args.latency_ms, max_qps=args.max_qps,
                    time_scale=args.time_scale, tls=False)
    sim.start()
    try:
        sim.write_kubeconfig(args.kubeconfig)
        out.write(json.dumps({'url': sim.url,
                              'seed_s': time.monotonic() - started}) + '\n')
        out.flush()
        _serve(sim, out)
    finally:
        sim.stop()
    out.flush()
    command.exit_now(0)   # no teardown of the heap, object by object


class Cluster:
    """The harness's handle on one simulator process."""

    def __init__(self, workdir, vms, namespaces, latency_ms=0, max_qps=None,
                 time_scale=1.0, deadline_s=300.0):
        self.vms, self.namespaces = vms, namespaces
        self.latency_ms, self.max_qps = latency_ms, max_qps
        self.kubeconfig = os.path.join(
            workdir, 'kubeconfig-%d-%s' % (vms, latency_ms))
        self.log_path = self.kubeconfig + '.log'
        argv = [sys.executable, '-m', 'sushy_kubevirt.bench.cluster',
                '--vms', str(vms), '--namespaces', str(namespaces),
                '--latency-ms', str(latency_ms),
                '--time-scale', str(time_scale),
                '--kubeconfig', self.kubeconfig]
        if max_qps:
            argv += ['--max-qps', str(max_qps)]
        self.proc = procs.spawn(argv, self.log_path, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._reply(deadline_s)
        self.url, self.seed_s = ready['url'], ready['seed_s']

    @property
    def namespace_names(self):
        if self.namespaces == 1:
            return ['default']
        return ['ns-%03d' % i for i in range(self.namespaces)]

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _reply(self, timeout):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None:
            raise procs.StartError('simulator did not answer:\n%s'
                                   % procs.log_tail(self.log_path))
        return json.loads(line)

    def _call(self, cmd, timeout=60.0, **args):
        self.proc.stdin.write(json.dumps(dict(args, cmd=cmd)) + '\n')
        self.proc.stdin.flush()
        return self._reply(timeout)

    def counts(self):
        """API requests ``{'verb resource': n}`` since the previous call."""
        return self._call('counts')['counts']

    def informer_lists(self, since):
        """Pages of the informers' first lists since epoch ``since``.

        ``{'pages': n, 'last_end': epoch seconds the last one ended}``.
        """
        return self._call('informer_lists', since=since)

    def settle(self, quiet_s=0.4, deadline_s=30.0):
        """Wait until the cluster has been still for ``quiet_s``."""
        waited = self._call('settle', timeout=deadline_s + 10,
                            quiet_s=quiet_s, deadline_s=deadline_s)
        if waited['waited_s'] is None:
            raise RuntimeError('the cluster did not settle in %.0f s'
                               % deadline_s)
        return waited['waited_s']

    def hold_sync(self):
        """Stall the informers' first lists: caches stay unsynced."""
        self._call('hold_sync')

    def release_sync(self):
        self._call('release_sync')

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({'cmd': 'stop'}) + '\n')
                self.proc.stdin.close()
                self.proc.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                pass
        procs.stop(self.proc)


if __name__ == '__main__':
    main()
