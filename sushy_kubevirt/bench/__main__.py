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

"""``python -m sushy_kubevirt.bench``: run the benchmarks, print, save.

``--quick`` runs the figures a history keeps (``--history FILE`` appends
the record, ``--gate FILE`` checks it against that history);
``python -m sushy_kubevirt.bench history FILE`` prints a history's trend.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

from sushy_kubevirt.bench import ceiling
from sushy_kubevirt.bench import emulators
from sushy_kubevirt.bench import history
from sushy_kubevirt.bench import imageserver
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import measure
from sushy_kubevirt.bench import profile
from sushy_kubevirt.bench import quick
from sushy_kubevirt.bench import report
from sushy_kubevirt.bench import runner

FULL_SIZES = (100, 1000, 10000)
LARGE_SIZES = (1000, 10000, 100000)
QUICK_SERVER = 'devserver'
QUICK_SCALE = 1000
CEILING_SIZES = (1000, 10000)
#: The scale mode's caches: one per namespace, or one cluster-wide.
SCALE_MODES = ('namespaces', 'cluster')


def _csv(choices):
    def parse(text):
        items = tuple(x for x in text.split(',') if x)
        bad = [x for x in items if x not in choices]
        if bad:
            raise argparse.ArgumentTypeError(
                '%s: choose from %s' % (','.join(bad), ','.join(choices)))
        return items
    return parse


def _sizes(text):
    return tuple(int(x) for x in text.split(',') if x)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench', description=__doc__)
    add = parser.add_argument
    add('--vms', type=int, default=50, help='VMs (and fake systems)')
    add('--namespaces', type=int, default=2)
    add('--servers', type=_csv(emulators.SERVERS),
        help='default: %s (--quick: %s)' % (','.join(emulators.SERVERS),
                                            QUICK_SERVER))
    add('--modes', type=_csv(measure.MODES), default=measure.MODES)
    add('--workloads', type=_csv(load.WORKLOADS), default=load.WORKLOADS)
    add('--latency-ms', type=float, default=20.0,
        help='simulated API latency of the second profile, which runs on '
        'the first server only (0: skip it)')
    add('--max-qps', type=float, default=50.0,
        help='API server throttling of the second profile')
    add('--rounds', type=int,
        help='Ironic poll rounds over all nodes (ironic, mixed; default 4, '
        '--quick: 2 per run)')
    add('--seconds', type=float, default=8.0,
        help='time bound of each workload')
    add('--parallel', type=int, default=8,
        help='client threads for ironic and mixed (pr32 uses 20)')
    add('--keepalive', action='store_true',
        help='reuse connections (default: Connection: close, as sushy)')
    add('--calls', type=int,
        help='requests per kind when counting API calls (0: skip; '
        'default 6, --quick: 2)')
    add('--lag-samples', type=int, default=4)
    add('--warm-deadline', type=float, default=60.0)
    add('--no-vmedia', action='store_true')
    add('--scale', type=_sizes, default=(),
        help='comma-separated VM counts for the scale mode (--quick: one '
        'count, default %d, 0 to skip)' % QUICK_SCALE)
    add('--scale-server', choices=emulators.SERVERS, default='devserver')
    add('--scale-modes', choices=SCALE_MODES + ('both',),
        help='the scale mode\'s caches: one per namespace, cluster-wide or '
        'both (default: both with --large, else as --all-namespaces says)')
    add('--large', action='store_true',
        help='the scale mode only, at 1,000, 10,000 and 100,000 VMs (1,000 '
        'per namespace); heavy: about 5 minutes and 4 GB')
    add('--all-namespaces', action='store_true',
        help='the emulator serves every namespace (cluster-wide informers) '
        'instead of listing the cluster\'s')
    add('--full', action='store_true',
        help='also scale to 100, 1,000 and 10,000 VMs and profile')
    add('--ceiling', type=_sizes, default=(),
        help='comma-separated VM counts at which each server is loaded in '
        'turns with its ceiling (a bare Flask app answering the same '
        'bytes; only this and --scale; --full: %s)'
        % ','.join(map(str, CEILING_SIZES)))
    add('--profile', action='store_true',
        help='profile the warm hot path with py-spy')
    add('--quick', action='store_true',
        help='the gated figures only, side by side on one server (under '
        '2 minutes)')
    add('--pairs', type=int, default=5,
        help='--quick: warm/fake load pairs (each ratio is their median)')
    add('--live-seconds', type=float, default=4.0,
        help='--quick: time bound of each load on the live path')
    add('--history', metavar='FILE',
        help='--quick or --large: append the run\'s record to this '
        'history')
    add('--accept', metavar='REASON',
        help='--history: the record\'s regressions are on purpose, for '
        'this reason (kept in the record as "accepted")')
    add('--gate', metavar='FILE',
        help='--quick: check the run against this history; exit %d on a '
        'regression' % history.REGRESSED)
    add('--window', type=int, default=history.WINDOW,
        help='--gate: previous records whose median is the baseline')
    add('--threshold', type=float, default=history.THRESHOLD,
        help='--gate: percent below its baseline a ratio may fall')
    add('--output', default='bench-results.json')
    add('--workdir', help='keep configs and logs here (default: temp)')
    args = parser.parse_args(argv)
    if args.gate and not args.quick:
        parser.error('--gate needs --quick')
    if args.history and not (args.quick or args.large):
        parser.error('--history needs --quick or --large')
    if args.accept and not args.history:
        parser.error('--accept needs --history')
    if args.servers is None:
        args.servers = (QUICK_SERVER,) if args.quick else emulators.SERVERS
    if args.rounds is None:
        args.rounds = 2 if args.quick else 4
    if args.calls is None:
        args.calls = 2 if args.quick else 6
    if args.large:
        args.scale = args.scale or LARGE_SIZES
        args.warm_deadline = max(args.warm_deadline, 600.0)
    if args.scale_modes == 'both' or (args.scale_modes is None
                                      and args.large):
        args.scale_modes = SCALE_MODES
    else:
        args.scale_modes = (args.scale_modes or (
            'cluster' if args.all_namespaces else 'namespaces'),)
    return args


def _plan(args, workdir, image_url):
    return measure.Plan(
        workdir=workdir, vms=args.vms, namespaces=args.namespaces,
        rounds=args.rounds, seconds=args.seconds, parallel=args.parallel,
        keepalive=args.keepalive, calls_requests=args.calls,
        lag_samples=args.lag_samples, warm_deadline_s=args.warm_deadline,
        workloads=args.workloads, image_url=image_url,
        all_namespaces=args.all_namespaces)


def _print(title, text):
    if text:
        print('\n== %s ==\n%s' % (title, text), flush=True)


def _log(message):
    print(message, file=sys.stderr, flush=True)


def run_quick(args, workdir):
    images = None if args.no_vmedia else imageserver.ImageServer()
    started = time.monotonic()
    try:
        plan = _plan(args, workdir, images and images.url)
        _log('quick: %d VMs in %d namespaces on %s'
             % (args.vms, args.namespaces, args.servers[0]))
        document = quick.run(plan, args.servers[0], args.pairs,
                             args.live_seconds,
                             args.scale[0] if args.scale else QUICK_SCALE,
                             _log)
    finally:
        if images:
            images.stop()
    document['duration_s'] = round(time.monotonic() - started, 1)
    document['record'] = history.record(document)
    return document


def main_quick(args, workdir):
    document = run_quick(args, workdir)
    report.write_json(args.output, document)
    entry = document['record']
    if args.accept:
        entry['accepted'] = args.accept
    _print('figures (recorded, not gated)', '\n'.join(
        '%s: %s' % item for item in sorted(entry['figures'].items())))
    status = 0
    if args.gate:
        records = history.load(args.gate) + [entry]
        print('gate: against %s' % args.gate)
        status = history.check(records, args.window, args.threshold)
    else:
        print(history.trend([entry]))
    if args.history:
        history.append(args.history, entry)
        print('record appended to %s' % args.history)
    print('results: %s (%.0f s)'
          % (os.path.abspath(args.output), document['duration_s']))
    return status


def run(args, workdir):
    log = _log
    images = None if args.no_vmedia else imageserver.ImageServer()
    started = time.monotonic()
    document = {'machine': report.machine(), 'options': vars(args)}
    try:
        plan = _plan(args, workdir, images and images.url)
        profiles = runner.PROFILES[:1]
        if args.latency_ms:
            profiles += ((args.latency_ms, args.max_qps or None),)
        if args.large or args.ceiling:
            document['runs'] = []
        else:
            log('side by side: %d VMs in %d namespaces'
                % (args.vms, args.namespaces))
            document.update(runner.side_by_side(plan, args.servers,
                                                args.modes, profiles, log))
        sizes = args.scale or (FULL_SIZES if args.full else ())
        if sizes:
            document['scale'] = runner.scale(plan, sizes, args.scale_server,
                                             args.scale_modes, log=log)
        sizes = args.ceiling or (CEILING_SIZES if args.full else ())
        if sizes:
            document['ceiling'] = quick.ceilings(plan, sizes, args.servers,
                                                 args.pairs, log)
        if args.profile or args.full:
            if profile.pyspy():
                raw = os.path.join(workdir, 'profile.txt')
                runner.hot_path(plan, raw, log=log)
                document['profile'] = profile.summarize(raw)
            else:
                log('py-spy is not installed: no profile')
    finally:
        if images:
            images.stop()
    document['ratios'] = report.ratios(document['runs'])
    document['duration_s'] = round(time.monotonic() - started, 1)
    return document


def show(document, workloads):
    runs = document['runs']
    if runs:
        _print('latency (ms), throughput (req/s), start-up, RSS',
               report.runs_table(runs, workloads))
        _print('Kubernetes API calls per Redfish request',
               report.calls_table(runs))
        _print('ratios (throughput)', report.ratios_text(document['ratios']))
    if document.get('scale'):
        _print('scale (warm, %s)' % document['scale'][0]['server'],
               report.scale_table(document['scale']))
    if document.get('ceiling'):
        _print('the emulator beside its ceiling (warm GET /Systems/{id})',
               ceiling.table(document['ceiling']))
    if document.get('profile'):
        _print('profile', profile.text(document['profile']))
    machine = document['machine']
    print('\n%s CPUs (%s), Python %s; %.0f s' % (
        machine['nproc'], machine['cpu'], machine['python'],
        document['duration_s']))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['history']:
        return history.main(argv[1:])
    args = parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix='sushy-kubevirt-bench-')
    os.makedirs(workdir, exist_ok=True)
    try:
        if args.quick:
            return main_quick(args, workdir)
        document = run(args, workdir)
        show(document, args.workloads)
        report.write_json(args.output, document)
        if args.history and document.get('scale'):
            history.append(args.history, dict(
                history.provenance(), kind='scale',
                figures=report.scale_record(document['scale'])))
        print('results: %s' % os.path.abspath(args.output))
        return 0
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
