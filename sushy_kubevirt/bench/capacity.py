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

"""The capacity curve: requests per second held at a p99, per worker count.

``python -m sushy_kubevirt.bench.capacity`` seeds a simulator with
``--vms`` VMs, then for each gunicorn worker count runs this driver (warm
caches) and sushy-tools' fake driver (as many fake systems) with the same
gunicorn settings, one after the other, under Ironic's request mix
(:func:`load.tasks` ``capacity``: System and SecureBoot GETs, a boot
PATCH pair and a vmedia insert and eject in every 20 tasks; the vmedia
pair only where the driver has virtual media). Two loads, stepped up:
closed (``--clients`` clients, each waiting for its answer) and open
(tasks arriving at a fixed rate, ``--rate`` times ``--rate-factor`` per
step). A backend's capacity is the most requests per second of a step
with p99 under ``--p99-ms``, no error and no dropped arrival. Then a
py-spy profile of each with one worker, attached for a closed load only
(``--profile-clients``, ``--profile-seconds``).

The API server's cost is kept apart from the emulator's (``--pin``, the
default with two CPUs or more): the emulator, all its workers, gets the
last CPU this process may use, to itself; the simulator, the load
generator, the image server and this harness share the others. A real
API server and Ironic run on other machines than the emulator; on one
machine the simulator, a Python process answering the emulator's writes,
otherwise competes for the emulator's cores (unpinned on 2 cores, a third
of the request time went to it). The fake driver gets the same single
CPU, so both emulators are judged on one whole core. Pinning keeps the
simulator's answers real: a write still waits for them, only their CPU
is not the emulator's. ``--api-latency-ms`` adds a fixed delay to every
API request (a network's round trip; no CPU spent), 0 by default.
Each step also reports the emulator's CPU seconds per request (server and
workers, from ``/proc``): the cost that sizes a deployment.

Writes the figures as JSON (``--output``), a record to ``--history``
(``kind`` ``capacity-fair`` when pinned; ``capacity`` unpinned, the
kind of the earlier records, which were all unpinned), the curve to
``--plot`` and, from the records of the kind in ``--history``, their
trend to ``--trend``.
"""

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import time

from sushy_kubevirt.bench import capacityplot
from sushy_kubevirt.bench import cluster as clusters
from sushy_kubevirt.bench import history
from sushy_kubevirt.bench import imageserver
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import measure
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import profile
from sushy_kubevirt.bench import report
from sushy_kubevirt import config

BACKENDS = (('kubevirt', 'warm'), ('fake', 'fake'))
#: Open-loop threads: enough for 10 x the p99 bound at 600 tasks/s.
POOL = 64
WARM_UP_S = 2.0


def _ints(text):
    return tuple(int(x) for x in text.split(',') if x)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench.capacity',
        description=__doc__.split('\n\n')[0])
    add = parser.add_argument
    add('--vms', type=int, default=10000)
    add('--namespaces', type=int, default=10)
    add('--workers', type=_ints, default=(1, 2, 4))
    add('--clients', type=_ints, default=(1, 2, 4, 8, 16, 32),
        help='closed-loop steps')
    add('--rate', type=float, default=10.0,
        help='first open-loop step, tasks/s')
    add('--rate-factor', type=float, default=1.5)
    add('--rate-steps', type=int, default=12)
    add('--seconds', type=float, default=5.0, help='per step')
    add('--p99-ms', type=float, default=100.0)
    add('--profile-seconds', type=float, default=10.0,
        help='0: no profile')
    add('--profile-clients', type=int, default=4)
    add('--warm-deadline', type=float, default=900.0)
    add('--pin', action=argparse.BooleanOptionalAction,
        default=len(os.sched_getaffinity(0)) > 1,
        help='the emulator on a CPU of its own (default with 2 CPUs or '
        'more)')
    add('--api-latency-ms', type=float, default=0.0,
        help='added to every API request of the simulator')
    add('--qps', type=float,
        help='this driver\'s live API calls per second and process '
        '(SUSHY_EMULATOR_KUBEVIRT_QPS, burst twice that; default: the '
        'driver\'s own, %g): the mix\'s writes are one call or two each, '
        'so the default bounds its capacity at about %g req/s a worker'
        % (config.Settings.qps, round(config.Settings.qps * 22 / 6)))
    add('--history', metavar='FILE', help='append the record here')
    add('--plot', metavar='OUT.png')
    add('--trend', metavar='OUT.png',
        help='with --history: the trend of the records of this kind')
    add('--output', default='capacity.json')
    add('--workdir', help='keep configs and logs here (default: temp)')
    return parser.parse_args(argv)


def _log(message):
    print(message, file=sys.stderr, flush=True)


def _summary(result, p99_ms, **step):
    total = result['total']
    ok = (total['requests'] > 0 and not total['errors']
          and not result['dropped'] and total['p99_ms'] < p99_ms)
    kinds = {kind: found['p99_ms'] for kind, found in result['kinds'].items()}
    gets = (not total['errors'] and not result['dropped']
            and kinds.get('get_system', p99_ms) < p99_ms)
    return dict(step, ok=ok, gets_ok=gets, requests=total['requests'],
                rps=total['rps'], cpu_ms=result['cpu_ms'],
                p50_ms=total['p50_ms'], p99_ms=total['p99_ms'],
                errors=total['errors'], dropped=result['dropped'],
                kinds_p99_ms=kinds, failures=result['failures'])


def _over(steps):
    """Whether the last two steps were over the bound (the curve's end)."""
    return len(steps) >= 2 and not (steps[-1]['ok'] or steps[-2]['ok'])


def cpus(pin):
    """``(harness CPUs, emulator CPUs)``: the last CPU apart if ``pin``."""
    allowed = sorted(os.sched_getaffinity(0))
    if not pin or len(allowed) < 2:
        return None, None
    return frozenset(allowed[:-1]), frozenset(allowed[-1:])


def _steps(args, spec, emu):
    """The closed, then the open steps, until two in a row are over."""
    found = {'closed': [], 'open': []}
    for clients in args.clients:
        result = measure.loaded(emu, dict(
            spec, parallel=clients,
            requests=int(clients * args.seconds * 500) + 10))
        found['closed'].append(_summary(result, args.p99_ms,
                                        clients=clients))
        if _over(found['closed']):
            break
    for step in range(args.rate_steps):
        rate = args.rate * args.rate_factor ** step
        result = measure.loaded(emu, dict(
            spec, parallel=POOL, rate=rate,
            requests=int(rate * args.seconds * 2) + 10))
        found['open'].append(_summary(result, args.p99_ms,
                                      rate=round(rate, 1)))
        if _over(found['open']):
            break
    return found


def capacity(steps, key='ok'):
    """The most requests/s of a step under the p99 bound (None if none)."""
    return max((s['rps'] for s in steps if s[key]), default=None)


def peak(steps):
    """The most requests/s of a step without error, whatever its p99."""
    return max((s['rps'] for s in steps if not s['errors']), default=None)


def cpu_ms(steps):
    """The emulator's CPU ms per request over ``steps`` (None if none)."""
    done = sum(s['requests'] for s in steps if s['cpu_ms'] is not None)
    spent = sum(s['cpu_ms'] * s['requests'] for s in steps
                if s['cpu_ms'] is not None)
    return round(spent / done, 3) if done else None


def _profile(args, spec, emu, raw):
    """py-spy attached to every process of ``emu`` for a closed load.

    After the steps, so that they are not slowed by it; py-spy runs where
    this harness does (not on the emulator's CPU when pinned). None when
    it wrote no profile in time (a loaded machine).
    """
    spy = procs.spawn(
        [profile.pyspy(), 'record', '--format', 'raw', '--rate', '100',
         '--subprocesses', '--nonblocking', '--pid', str(emu.proc.pid),
         '--duration', str(int(args.profile_seconds) + 1), '--output', raw],
        raw + '.log')
    try:
        time.sleep(0.5)   # attached
        load.spawn_run(dict(spec, parallel=args.profile_clients,
                            seconds=args.profile_seconds,
                            requests=int(args.profile_seconds * 4000)))
        spy.wait(args.profile_seconds + 30)
    except subprocess.TimeoutExpired:
        _log('py-spy wrote no profile in time: %s'
             % procs.log_tail(raw + '.log', 300))
        return None
    finally:
        procs.stop(spy)
    return profile.summarize(raw) if os.path.exists(raw) else None


def _affinity(emu):
    """The CPUs the emulator's server and workers may run on."""
    pids = [emu.proc.pid] + procs.children(emu.proc.pid)
    return sorted(set().union(*(os.sched_getaffinity(p) for p in pids)))


def _backend(args, plan, mode, cluster):
    # Not started under py-spy (``plan.profile``): it attaches later.
    emu, result, ids = measure.start(
        dataclasses.replace(plan, profile=None), 'gunicorn', mode, cluster)
    try:
        media = plan.image_url and measure.vmedia_available(emu.port, ids[0])
        spec = {'port': emu.port, 'systems': ids, 'workload': 'capacity',
                'seconds': args.seconds, 'timeout': 30.0,
                'image_url': plan.image_url if media else None}
        # First answers of a fresh worker (imports, first connections)
        # are not the steady state: a short load before the steps.
        load.spawn_run(dict(spec, parallel=2, seconds=WARM_UP_S,
                            requests=int(WARM_UP_S * 1000)))
        result.update(vmedia=bool(media), workers=plan.workers,
                      affinity=_affinity(emu), steps=_steps(args, spec, emu))
        if plan.profile:
            result['profile'] = _profile(args, spec, emu, plan.profile)
        result['rss_end_kb'] = emu.rss_kb()
    finally:
        emu.stop()
    for name, steps in result['steps'].items():
        result[name], result[name + ' peak'] = capacity(steps), peak(steps)
        result[name + ' gets'] = capacity(steps, 'gets_ok')
        result[name + ' cpu'] = cpu_ms(steps)
    return result


def run(args, workdir, images, emulator_cpus=None):
    plan = measure.Plan(workdir=workdir, vms=args.vms,
                        namespaces=args.namespaces, image_url=images.url,
                        warm_deadline_s=args.warm_deadline,
                        cpus=emulator_cpus, settings=args.qps and {
                            'SUSHY_EMULATOR_KUBEVIRT_QPS': args.qps,
                            'SUSHY_EMULATOR_KUBEVIRT_BURST':
                            int(2 * args.qps)})
    started = time.monotonic()
    cluster = clusters.Cluster(workdir, args.vms, args.namespaces,
                               latency_ms=args.api_latency_ms,
                               deadline_s=args.warm_deadline)
    document = {'machine': report.machine(), 'options': vars(args),
                'seed_s': round(cluster.seed_s, 1), 'runs': [],
                'profiles': {}, 'kind': kind(emulator_cpus),
                'emulator_cpus': sorted(emulator_cpus or ())}
    spy = args.profile_seconds and profile.pyspy()
    try:
        for workers in args.workers:
            for driver, mode in BACKENDS:
                _log('%s, %d worker(s)' % (driver, workers))
                raw = spy and workers == 1 and os.path.join(
                    workdir, 'profile-%s.txt' % driver)
                run = _backend(args, dataclasses.replace(
                    plan, workers=workers, profile=raw or None), mode,
                    cluster)
                if raw:
                    document['profiles'][driver] = run.pop('profile')
                document['runs'].append(dict(run, driver=driver))
    finally:
        cluster.stop()
    document['loadavg'] = [round(x, 2) for x in os.getloadavg()]
    document['duration_s'] = round(time.monotonic() - started, 1)
    return document


def kind(emulator_cpus):
    """The record's kind: pinned runs are apart from the earlier ones."""
    return 'capacity-fair' if emulator_cpus else 'capacity'


#: The figures of each row after the ratio, ours then the fake's.
EXTRA = ('gets', 'peak', 'cpu')


def rows(document):
    """``[workers, mode, ours, fake, ratio]`` and each of :data:`EXTRA`."""
    found = {(r['workers'], r['driver']): r for r in document['runs']}
    result = []
    for workers in sorted({w for w, _ in found}):
        for mode in ('closed', 'open'):
            ours, fake = (found[workers, d] for d in ('kubevirt', 'fake'))
            row = [workers, mode, ours[mode], fake[mode],
                   ours[mode] and fake[mode]
                   and round(ours[mode] / fake[mode], 2)]
            for extra in EXTRA:
                row += [ours[mode + ' ' + extra], fake[mode + ' ' + extra]]
            result.append(row)
    return result


def table(document):
    """The rows as text; ``-``: even the first step was over the bound."""
    p99 = document['options']['p99_ms']
    note = ('\n(requests/s at p99 < %g ms; gets: the System GETs\' p99 '
            'only; peak: whatever the p99; CPU: the emulator\'s ms per '
            'request over the steps; %d VMs; %s)'
            % (p99, document['options']['vms'],
               'emulator pinned to CPU %s' % document['emulator_cpus']
               if document['emulator_cpus'] else 'unpinned'))
    return report.table(
        ['workers', 'load', 'kubevirt req/s', 'fake req/s', 'ratio',
         'kubevirt gets', 'fake gets', 'kubevirt peak', 'fake peak',
         'kubevirt CPU ms', 'fake CPU ms'],
        rows(document)) + note


def record(document):
    """The history record: figures only (nothing here is gated)."""
    figures = {}
    names = ('kubevirt', 'fake', 'kubevirt/fake', 'kubevirt gets',
             'fake gets', 'kubevirt peak', 'fake peak')
    for workers, mode, *values in rows(document):
        for name, value in zip(names, values):
            figures['%s %dw %s req/s' % (name, workers, mode)] = value
        ours, fake = values[-2:]
        figures['kubevirt %dw %s CPU ms/request' % (workers, mode)] = ours
        figures['fake %dw %s CPU ms/request' % (workers, mode)] = fake
        figures['fake/kubevirt %dw %s CPU' % (workers, mode)] = (
            ours and fake and round(fake / ours, 2))
    figures.update({'vms': document['options']['vms'],
                    'api latency ms': document['options']['api_latency_ms'],
                    'api qps': document['options']['qps']
                    or config.Settings.qps,
                    'seed s': document['seed_s'],
                    'load average': document['loadavg'][0],
                    'duration s': document['duration_s']})
    steps = [s for r in document['runs'] for mode in r['steps'].values()
             for s in mode]
    return dict(history.provenance(), kind=document['kind'],
                figures=figures,
                errors=sum(s['errors'] for s in steps),
                failures=[f for s in steps for f in s['failures']][:5])


def main(argv=None):
    args = parse_args(argv)
    if args.trend and not args.history:
        sys.exit('--trend needs --history')
    workdir = args.workdir or tempfile.mkdtemp(prefix='sushy-kubevirt-cap-')
    os.makedirs(workdir, exist_ok=True)
    harness, emulator = cpus(args.pin)
    if harness:
        # Before any thread or child: all of them inherit it.
        os.sched_setaffinity(0, harness)
    images = imageserver.ImageServer()
    try:
        document = run(args, workdir, images, emulator)
    finally:
        images.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    document['record'] = record(document)
    report.write_json(args.output, document)
    print(table(document))
    for driver, summary in document['profiles'].items():
        if summary:
            print('\nprofile, %s:\n%s' % (driver, profile.text(summary)))
    if args.history:
        history.append(args.history, document['record'])
    if args.plot:
        capacityplot.draw(document, args.plot)
    if args.trend:
        capacityplot.draw_trend(
            history.load_kind(args.history, document['kind']), args.trend)
    return 0


if __name__ == '__main__':
    sys.exit(main())
