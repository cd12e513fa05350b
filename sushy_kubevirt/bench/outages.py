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

"""Faults under a light Ironic-like load, and what Redfish answered.

While a few threads GET Systems and Systems/{id} and one resets a node
(``Traffic``, ``Writer``; every answer is recorded with its time):

``restart``
  the API server is killed (``kill -9`` for kube-apiserver) and serves
  again ``--down`` seconds later: the answers during the outage, then the
  time from ready until a Reset works and until an administrator's VM
  change shows in every worker, and the informers' relists and re-watches;
``compaction``
  a compaction, then a burst of VM writes by the administrator: the time
  until every worker shows them, and any relist (410);
``rbac``
  the emulator's permissions revoked (kube-apiserver: the
  ClusterRoleBinding deleted): the answers from the cache, then after a
  restart that breaks the watches, then the recovery once restored.
"""

import json
import time

from sushy_kubevirt.bench import faultload
from sushy_kubevirt.bench import workers as workers_mod
from sushy_kubevirt.kube import accounting

SYSTEMS = faultload.SYSTEMS
COUNTERS = (accounting.RELISTS, accounting.WATCH_RESTARTS)


def add_arguments(add):
    add('--down', type=float, default=5.0,
        help='--faults: seconds the API server stays down')
    add('--load-threads', type=int, default=3,
        help='--faults: threads of the light GET load')
    add('--fault-window', type=float, default=10.0,
        help='--faults: seconds each answer window lasts')
    add('--burst', type=int, default=50,
        help='--faults: VM writes by the administrator after compaction')
    add('--settle', type=float, default=4.0,
        help='--faults: seconds without a re-list or re-watch before each '
        'scenario')
    add('--recovery-deadline', type=float, default=180.0)


def _informers(workers):
    """Per worker: synced, forbidden, relists and re-watches (summed)."""
    result = {}
    for pid in sorted(workers.pids()):
        values = workers.metrics(pid)
        entry = {'synced': workers_mod.synced(values),
                 'forbidden': sum(workers_mod.metric(
                     values, accounting.FORBIDDEN).values())}
        for name in COUNTERS:
            entry[name] = sum(workers_mod.metric(values, name).values())
        result[str(pid)] = entry
    return result


def _delta(before, after):
    return {pid: {name: after[pid][name] - before.get(pid, {}).get(name, 0)
                  for name in COUNTERS} for pid in after}


def _count(workers, pid, node):
    status, body = workers.request(pid, '%s/%s' % (SYSTEMS, node))
    if status != 200:
        return None
    return json.loads(body)['ProcessorSummary']['Count']


def _cores(target, index):
    vm = target.get_vm(*target.vm_name(index))
    return vm['spec']['template']['spec']['domain']['cpu']['cores']


def _set_cores(target, index, cores):
    target.patch_vm(*target.vm_name(index), {'spec': {'template': {
        'spec': {'domain': {'cpu': {'cores': cores}}}}}})


def change_visible(target, workers, index, node, deadline_s, since=None):
    """Patch a VM's cores as the admin; when each worker shows it.

    Seconds from ``since`` (monotonic; default: the patch), None for a
    worker that did not show it before the deadline.
    """
    pids = sorted(workers.pids())
    before = {pid: _count(workers, pid, node) for pid in pids}
    cores = _cores(target, index)
    _set_cores(target, index, cores + 1 if cores < 4 else cores - 1)
    patched = time.monotonic()
    since = patched if since is None else since
    seen = {}
    while len(seen) < len(pids) and time.monotonic() - patched < deadline_s:
        for pid in pids:
            if pid not in seen and _count(workers, pid, node) not in (
                    None, before[pid]):
                seen[pid] = round(time.monotonic() - since, 3)
        time.sleep(0.05)
    return {'patched_s': round(patched - since, 3),
            'workers': {str(pid): seen.get(pid) for pid in pids}}


def _wait_synced(workers, since, deadline_s):
    """Seconds from ``since`` until every worker is synced (or None)."""
    while time.monotonic() - since < deadline_s:
        if all(workers_mod.synced(workers.metrics(pid))
               for pid in workers.pids()):
            return round(time.monotonic() - since, 3)
        time.sleep(0.1)
    return None


def _settle(workers, quiet_s, deadline_s):
    """Wait until no informer re-lists or re-watches for ``quiet_s``.

    So that a scenario starts from steady caches, not from a reflector
    still in its backoff after the previous one. Seconds waited or None.
    """
    started = time.monotonic()
    last, since = None, started
    while time.monotonic() - started < deadline_s:
        now = _informers(workers)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s and all(
                w['synced'] for w in now.values()):
            return round(time.monotonic() - started, 3)
        time.sleep(0.25)
    return None


def _since(start, value):
    return None if value is None else round(value - start, 3)


def _answers(ctx, since, until=None):
    return faultload.summarize(ctx.traffic.window(since, until) +
                               ctx.writer.window(since, until))


def _last_read_failure(ctx, since):
    """Seconds from ``since`` to the last GET answered other than 200."""
    failed = [r[0] for r in ctx.traffic.window(since)
              if r[1] == 'GET System' and r[2] != 200]
    return round(max(failed) - since, 3) if failed else 0.0


def restart(ctx):
    """Kill the API server; answers down, time until all works again."""
    args = ctx.args
    before = _informers(ctx.workers)
    killed = time.monotonic()
    down = ctx.target.restart(args.down)
    ready = time.monotonic()
    result = {'down_s': down,
              'visible_s': change_visible(
                  ctx.target, ctx.workers, ctx.probe, ctx.probe_node,
                  args.recovery_deadline, since=ready),
              # From ready: negative when kube-apiserver served it before
              # /readyz said so.
              'reset_works_s': _since(ready, ctx.writer.first_success(
                  killed, args.recovery_deadline))}
    settled = time.monotonic()
    result.update(outage=_answers(ctx, killed, ready),
                  recovering=_answers(ctx, ready, settled),
                  writer=faultload.timeline(
                      ctx.writer.window(killed - 2.0, settled), killed),
                  informers=_delta(before, _informers(ctx.workers)))
    return result


def compaction(ctx):
    """Compact, then a burst of admin VM writes: does every cache follow?"""
    args, target, workers = ctx.args, ctx.target, ctx.workers
    before = _informers(workers)
    started = time.monotonic()
    revision = target.compact()
    indices = list(range(2, min(target.vms, 2 + args.burst)))
    nodes = {i: target.node_id(i) for i in indices}
    pid0 = workers.pids()[0]
    counts = {i: _count(workers, pid0, nodes[i]) for i in indices}
    burst_start = time.monotonic()
    for i in indices:
        cores = _cores(target, i)
        _set_cores(target, i, cores + 1 if cores < 4 else cores - 1)
    burst_s = time.monotonic() - burst_start
    converged = {}
    for pid in workers.pids():
        todo = set(indices)
        while todo and time.monotonic() - burst_start < \
                args.recovery_deadline:
            todo = {i for i in todo
                    if _count(workers, pid, nodes[i]) == counts[i]}
            if todo:
                time.sleep(0.05)
        converged[str(pid)] = {
            'seen_s': None if todo else round(
                time.monotonic() - burst_start, 3),
            'missing': len(todo)}
    return {'revision': revision, 'writes': len(indices),
            'burst_s': round(burst_s, 3), 'converged': converged,
            'visible_s': change_visible(target, workers, ctx.probe,
                                        ctx.probe_node,
                                        args.recovery_deadline),
            'answers': _answers(ctx, started),
            'informers': _delta(before, _informers(workers))}


def rbac(ctx):
    """Revoke the emulator's RBAC: cached, then watches broken; restore."""
    args, target = ctx.args, ctx.target
    before = _informers(ctx.workers)
    revoked = time.monotonic()
    target.revoke()
    restored = None
    try:
        time.sleep(args.fault_window)
        cached = time.monotonic()
        single = {
            'GET System': faultload.send(ctx.port, 'GET', '%s/%s' % (
                SYSTEMS, ctx.probe_node)),
            'Reset On': faultload.send(
                ctx.port, 'POST', faultload.RESET % ctx.probe_node,
                {'ResetType': 'On'})}
        target.restart(0)
        broken = time.monotonic()
        time.sleep(args.fault_window)
        during = _informers(ctx.workers)
    finally:
        target.restore()
        restored = time.monotonic()
    synced = _wait_synced(ctx.workers, restored, args.recovery_deadline)
    ok = ctx.writer.first_success(restored, args.recovery_deadline)
    time.sleep(1.0)
    return {'revoked_cached': _answers(ctx, revoked, cached),
            'single_after_window': single,
            'restart_while_revoked': _answers(ctx, cached, broken),
            'revoked_watches_broken': _answers(ctx, broken, restored),
            'informers_revoked': during,
            'recovering': _answers(ctx, restored),
            'writer': faultload.timeline(ctx.writer.window(revoked),
                                         revoked),
            'reset_works_s': _since(restored, ok),
            'synced_s': synced,
            'reads_ok_s': _last_read_failure(ctx, restored),
            'informers': _delta(before, _informers(ctx.workers))}


class _Context:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


SCENARIOS = (('restart', restart), ('compaction', compaction),
             ('rbac', rbac))


def run(target, port, workers, ids, args):
    """Every scenario under the light load; a dict per scenario."""
    ctx = _Context(target=target, port=port, workers=workers, args=args,
                   probe=min(1, target.vms - 1))
    ctx.probe_node = target.node_id(ctx.probe)
    deadline = 3600.0
    ctx.traffic = faultload.Traffic(port, ids, deadline).start(
        args.load_threads)
    ctx.writer = faultload.Writer(port, target.node_id(0), deadline).start()
    result = {}
    try:
        started = time.monotonic()
        for index, (name, scenario) in enumerate(SCENARIOS):
            # The first wait is the baseline: the load on a steady emulator.
            settled = _settle(workers, args.settle, args.recovery_deadline)
            if not index:
                result['baseline'] = _answers(ctx, started)
            began = time.monotonic()
            try:
                result[name] = scenario(ctx)
            except Exception as exc:
                result[name] = {'error': repr(exc)}
            result[name]['settled_before_s'] = settled
            result[name]['took_s'] = round(time.monotonic() - began, 1)
            failed = result[name].get('error')
            print('  %s: %s s%s' % (name, result[name]['took_s'],
                                    ', ' + failed if failed else ''),
                  flush=True)
    finally:
        ctx.traffic.stop()
        ctx.writer.stop()
    return result
