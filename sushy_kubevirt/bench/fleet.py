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

"""A fleet managed by Ironic through the emulator, KubeVirt SIG Scale style.

``python -m sushy_kubevirt.bench.fleet`` starts a cluster (``--backend
kubevirt``: the real kube-apiserver, etcd, KubeVirt and CDI, nodes
simulated; ``simulator`` for a quick run) with ``--vms`` VMs, this driver
under gunicorn as Ironic's devstack runs it, and an image server. Then:

1. **probe**: one node's deploy and another's BIOS apply, one request at
   a time (:mod:`.fleetprobe`), each step's Kubernetes API calls counted
   by the server (its audit log) and compared with the documented
   minimum;
2. **load** (:mod:`.fleetdrive`, its own process): the power poll of
   every node every 60 s, deploy waves and BIOS applies, for ``--minutes``.

It prints the emulator's latency per request kind, the API server's
requests per second the emulator caused (by verb and resource) beside
what a client reading live would cause for the same requests, every
client's total, the control plane's CPU seconds, and each wave's time from
first insert to all On. ``--json`` keeps everything, ``--history`` appends
a ``fleet`` record, ``--plot`` draws the fleet records' trend. Exit 1 when
a step's calls differ from the minimum, a warm poll made a call, a
request failed or a node's flow did not finish.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

from sushy_kubevirt.bench import backends
from sushy_kubevirt.bench import fleetdrive
from sushy_kubevirt.bench import fleetprobe
from sushy_kubevirt.bench import history
from sushy_kubevirt.bench import imageserver
from sushy_kubevirt.bench import measure
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import report
from sushy_kubevirt.bench import targets
from sushy_kubevirt.bench import workers as workers_mod

#: A client that reads live (kubevirt-redfish before its cache, the seed
#: PR's figures): API calls per System read and per boot PATCH.
LIVE_PER_READ, LIVE_PER_BOOT_PATCH = 6, 12
WRITES = ('insert', 'eject', 'boot_once', 'reset_on', 'bios_patch',
          'bios_reset')
READS = ('get_system', 'get_secureboot', 'media_get', 'wait_on',
         'bios_wait')


def _log(message):
    print('[fleet %s] %s' % (time.strftime('%H:%M:%S'), message), flush=True)


def _cpu(target, emu):
    found = {name: procs.cpu_s(pid)
             for name, pid in target.processes().items()}
    found['emulator (gunicorn)'] = emu.cpu_s()
    found['harness (this process)'] = time.process_time()
    return found


def _split(key):
    verb, _, resource = key.partition(' ')
    return verb, resource


def api_load(target, drive):
    """The API server's requests during the load: the emulator's, all."""
    since, until = drive['started'], drive['ended']
    wall = until - since
    everything = target.all_calls(since, until)
    users = collections.Counter()
    emulator = collections.Counter()
    watches = 0
    for (user, key), n in everything.items():
        users[user] += n
        if user == targets.EMULATOR_USER:
            if key.startswith('watch '):
                watches += n
            else:
                emulator[key] += n
    writes = sum(n for key, n in emulator.items()
                 if _split(key)[0] in fleetprobe.MUTATING)
    warm = target.calls(since, drive['warm_until'])
    conflicts = target.cluster.request_log.count(
        user=targets.EMULATOR_USER,
        status=lambda s: s in fleetprobe.CONFLICT,
        started=lambda t: since <= t <= until)
    return {
        'emulator_conflicts': conflicts,
        'wall_s': round(wall, 3),
        'emulator': dict(emulator), 'emulator_watches': watches,
        'emulator_writes': writes,
        'emulator_reads': sum(emulator.values()) - writes,
        'users': dict(users.most_common()),
        'all_rps': round(sum(users.values()) / wall, 2),
        'warm_poll_calls': sum(warm.values()),
    }


def live_costed(drive, api, steps):
    """Ours beside a client reading live, API requests/s, from the counts.

    A live client makes ``LIVE_PER_READ`` calls per GET and
    ``LIVE_PER_BOOT_PATCH`` per boot PATCH; its other writes are costed
    at ours (so its figure is a floor). ``{row: {requests, ours_rps,
    live_rps}}``.
    """
    kinds = drive['kinds']
    count = (lambda kind: kinds.get(kind, {}).get('requests', 0))
    reads = sum(count(k) for k in READS)
    wall = api['wall_s']
    ours_total = sum(api['emulator'].values())
    boot = count('boot_once') * steps.get('boot_once', 0)
    rows = {'reads': (reads, 0, reads * LIVE_PER_READ),
            'boot PATCH': (count('boot_once'), boot,
                           count('boot_once') * LIVE_PER_BOOT_PATCH),
            'other writes': (sum(count(k) for k in WRITES
                                 if k != 'boot_once'),
                             ours_total - boot, ours_total - boot)}
    rows['total'] = tuple(sum(v[i] for v in rows.values())
                          for i in range(3))
    return {name: {'requests': n, 'ours_rps': round(o / wall, 3),
                   'live_rps': round(l_ / wall, 3)}
            for name, (n, o, l_) in rows.items()}


def redfish_writes(drive):
    return sum(drive['kinds'].get(kind, {}).get('requests', 0)
               for kind in WRITES)


def checks(document):
    """The fleet's targets: ``{name: (value, wanted, ok, gated)}``.

    Gated (the exit status): each step's calls, warm polls' calls, failed
    requests and flows. Reported: the emulator's requests per write.
    """
    steps, api = document['probe']['steps'], document['api']
    drive = document['drive']
    found = {}
    for kind, wanted in fleetprobe.EXPECTED.items():
        value = steps.get(kind)
        found['calls per %s' % kind] = (value, wanted, value == wanted, True)
    polls = drive['warm_polls']
    found['calls per warm poll'] = (
        round(api['warm_poll_calls'] / polls, 3) if polls else None, 0,
        bool(polls) and api['warm_poll_calls'] == 0, True)
    errors = sum(k['errors'] for k in drive['kinds'].values())
    found['failed requests'] = (errors, 0, errors == 0, True)
    lost = sum(w['nodes'] - w['on'] + w['bios_nodes'] - w['bios']
               for w in drive['waves'] if w)
    found['flows not done in time'] = (lost, 0, lost == 0, True)
    ours = sum(api['emulator'].values())
    found['emulator requests per API write (watches apart)'] = (
        round(ours / max(1, api['emulator_writes']), 2), 1.0,
        ours <= api['emulator_writes'], False)
    found['emulator requests per Redfish write (watches apart)'] = (
        round(ours / max(1, redfish_writes(drive)), 2), 1.0,
        ours <= redfish_writes(drive), False)
    return found


def run(args, workdir):
    document = {'argv': sys.argv[1:], 'machine': report.machine(),
                'backend': args.backend, 'vms': args.vms,
                'namespaces': args.namespaces,
                'loadavg_start': os.getloadavg()}
    target = targets.make(args.backend, args.vms, args.namespaces, workdir,
                          time_scale=args.time_scale)
    images = imageserver.ImageServer()
    started = time.monotonic()
    try:
        _log('%s: starting %d VMs in %d namespaces'
             % (args.backend, args.vms, args.namespaces))
        document['start'] = target.start()
        _log('started: %s' % document['start'])
        emu, document['emulator_ready_s'] = backends.start_emulator(
            target, workdir)
        workers = workers_mod.Workers(emu.port, emu.proc.pid)
        try:
            document['sync'] = backends.sync(target, emu, workers, args.vms,
                                             args.sync_deadline)
            workers.close()
            _log('emulator synced in %s s' % document['sync']['sync_s'])
            ids = measure.system_ids(emu.port)
            document.update(drive_fleet(args, target, emu, ids, images.url))
        finally:
            workers.close()
            emu.stop()
            document['emulator_log'] = procs.log_tail(emu.log_path, 3000)
    finally:
        images.stop()
        target.stop()
    document['duration_s'] = round(time.monotonic() - started, 1)
    document['loadavg_end'] = os.getloadavg()
    document['checks'] = checks(document)
    return document


def drive_fleet(args, target, emu, ids, image_url):
    """The probe, then the load; their figures."""
    need = 3 + args.waves * (args.wave_size + args.bios)
    if len(ids) < need:
        raise SystemExit('%d waves of %d + %d BIOS need %d VMs, %d listed'
                         % (args.waves, args.wave_size, args.bios, need,
                            len(ids)))
    _log('probe: one node at a time')
    found = {'probe': fleetprobe.probe(target, emu.port, ids[:3],
                                       image_url, args.node_deadline)}
    _log('probe: %s' % found['probe']['steps'])
    spec = {
        'port': emu.port, 'image_url': image_url, 'poll_nodes': ids,
        'poll_period_s': args.poll_period, 'poll_threads': args.poll_threads,
        'seconds': args.minutes * 60.0, 'warm_s': args.warm,
        'waves': args.waves, 'wave_size': args.wave_size,
        'bios_per_wave': args.bios, 'wave_every_s': args.wave_every,
        'wave_nodes': ids[3:need], 'node_deadline_s': args.node_deadline,
        'pause_s': args.pause, 'retry_s': args.pause, 'timeout_s': 60.0}
    _log('load: %.1f min, %d waves of %d (+%d BIOS)' % (
        args.minutes, args.waves, args.wave_size, args.bios))
    before, load_before = _cpu(target, emu), os.getloadavg()
    done = subprocess.run(
        [sys.executable, '-m', fleetdrive.__name__], input=json.dumps(spec),
        capture_output=True, text=True, check=False,
        timeout=spec['seconds'] + args.waves * args.wave_every +
        args.node_deadline + 120)
    after = _cpu(target, emu)
    if done.returncode:
        raise RuntimeError('fleetdrive failed (%s):\n%s'
                           % (done.returncode, done.stderr[-3000:]))
    drive = found['drive'] = json.loads(done.stdout)
    drive['loadavg'] = [load_before, os.getloadavg()]
    found['cpu_s'] = {name: round(after[name] - before.get(name, 0), 1)
                      for name in after}
    found['api'] = api_load(target, drive)
    found['costed'] = live_costed(drive, found['api'],
                                  found['probe']['steps'])
    return found


def _ms(kind):
    return [kind['requests'], kind['p50_ms'], kind['p99_ms'], kind['errors'],
            ', '.join('%s: %s' % s for s in kind['statuses'].items())]


def render(document):
    drive, api = document['drive'], document['api']
    steps = document['probe']['steps']
    out = ['Fleet: %d VMs in %d namespaces on %s, %.0f s of load, %d polls '
           '(%d dropped), load average %s -> %s' % (
               document['vms'], document['namespaces'], document['backend'],
               drive['wall_s'], drive['polls'], drive['dropped'],
               '/'.join('%.1f' % x for x in drive['loadavg'][0]),
               '/'.join('%.1f' % x for x in drive['loadavg'][1])), '']
    rows = [[kind] + _ms(found) for kind, found in drive['kinds'].items()]
    out += [report.table(['request kind', 'n', 'p50 ms', 'p99 ms', 'err',
                          'statuses'], rows), '']
    by_call = document['probe']['by_call']
    rows = [[step, steps[step], fleetprobe.EXPECTED.get(step), '; '.join(
        '%s %d' % item for kind in fleetprobe.STEPS.get(step, (step,))
        for item in sorted(by_call.get(kind, {}).items()))]
        for step in steps]
    out += ['API calls per step of one node (probe, one request at a time; '
            'conflicts retried: %s; after-boot races: %s; background: %s)'
            % (document['probe']['conflicts'] or 0,
               document['probe']['races'] or 0,
               document['probe']['background'] or 0),
            report.table(['step', 'calls', 'minimum', 'calls made'], rows),
            '']
    wall = api['wall_s']
    rows = [[key, n, n / wall] for key, n in sorted(api['emulator'].items())]
    rows.append(['watches (ended in the window)', api['emulator_watches'],
                 api['emulator_watches'] / wall])
    rows.append(['all clients', sum(api['users'].values()), api['all_rps']])
    out += [report.table(['emulator: verb resource', 'requests', 'req/s'],
                         rows), '']
    rows = [[name, v['requests'], v['ours_rps'], v['live_rps']]
            for name, v in document['costed'].items()]
    out += [report.table(['API server req/s', 'Redfish requests', 'ours',
                          'live-reading client'], rows), '']
    out += [report.table(['process', 'CPU s during the load'], sorted(
        document['cpu_s'].items())), '']
    rows = [[w['wave'], w['nodes'], w['on'], w.get('insert_to_all_on_s'),
             (w.get('node_insert_to_on_s') or {}).get('p50_ms'),
             '%d/%d' % (w['bios'], w['bios_nodes']),
             ', '.join(w['stopped'])] for w in drive['waves'] if w]
    out += [report.table(['wave', 'nodes', 'On', 'insert -> all On s',
                          'node p50 ms', 'BIOS applied', 'stopped in'],
                         rows), '']
    rows = [[name, value, wanted, ('ok' if ok else 'NO') +
             ('' if gated else ' (not gated)')]
            for name, (value, wanted, ok, gated)
            in document['checks'].items()]
    out += [report.table(['target', 'value', 'wanted', ''], rows)]
    out += ['', 'failures: %s' % drive['failures'] if drive['failures']
            else '', 'duration %.0f s' % document['duration_s']]
    return '\n'.join(out)


def record(document):
    """The ``fleet`` history record (``calls``: each step's, exact)."""
    drive, api = document['drive'], document['api']
    ours = sum(api['emulator'].values())
    figures = {'vms': document['vms'], 'backend': document['backend'],
               'duration s': document['duration_s'],
               'load s': drive['wall_s'], 'polls': drive['polls'],
               'load average': round(drive['loadavg'][1][0], 2),
               'all clients API req/s': api['all_rps'],
               'emulator API req/s': document['costed']['total']['ours_rps'],
               'live-reading API req/s':
                   document['costed']['total']['live_rps'],
               'emulator watches ended': api['emulator_watches'],
               'emulator conflicts': api['emulator_conflicts'],
               'emulator requests per API write': round(
                   ours / max(1, api['emulator_writes']), 2),
               'emulator requests per Redfish write': round(
                   ours / max(1, redfish_writes(drive)), 2)}
    for row, found in document['costed'].items():
        for key, value in found.items():
            figures['%s %s' % (row, key.replace('_', ' '))] = value
    for kind, found in drive['kinds'].items():
        for key in ('requests', 'p50_ms', 'p99_ms'):
            figures['%s %s' % (kind, key.replace('_', ' '))] = found[key]
    for name, cpu in document['cpu_s'].items():
        figures['%s CPU s' % name] = cpu
    figures['flows not done in time'] = document['checks'][
        'flows not done in time'][0]
    figures['polls dropped'] = drive['dropped']
    figures['wave insert to all On s'] = [
        w['insert_to_all_on_s'] for w in drive['waves']
        if w and 'insert_to_all_on_s' in w]
    errors = sum(k['errors'] for k in drive['kinds'].values())
    calls = dict(document['probe']['steps'])
    calls['warm poll (load)'] = document['checks']['calls per warm poll'][0]
    return dict(history.provenance(), kind='fleet', figures=figures,
                calls=calls, minimum=dict(fleetprobe.EXPECTED),
                errors=errors, failures=drive['failures'][:5])


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench.fleet', description=__doc__)
    add = parser.add_argument
    add('--backend', default='kubevirt', choices=targets.BACKENDS)
    add('--vms', type=int, default=1000)
    add('--namespaces', type=int, default=10)
    add('--minutes', type=float, default=5.0, help='of polls (the load)')
    add('--waves', type=int, default=3)
    add('--wave-size', type=int, default=50)
    add('--bios', type=int, default=10, help='BIOS applies per wave')
    add('--wave-every', type=float, default=60.0, help='seconds')
    add('--warm', type=float, default=60.0,
        help='seconds of polls alone before the first wave')
    add('--poll-period', type=float, default=60.0)
    add('--poll-threads', type=int, default=8)
    add('--pause', type=float, default=2.0,
        help='seconds between two polls of a node in a flow')
    add('--node-deadline', type=float, default=300.0)
    add('--time-scale', type=float, default=1.0)
    add('--sync-deadline', type=float, default=900.0)
    add('--json', metavar='OUT')
    add('--history', metavar='FILE', help='append the fleet record')
    add('--plot', metavar='OUT.png',
        help='draw the trend of the fleet records of --history')
    add('--plot-only', action='store_true',
        help='only draw --plot from --history, run nothing')
    add('--workdir')
    args = parser.parse_args(argv)
    if (args.plot or args.plot_only) and not args.history:
        parser.error('--plot needs --history')
    if args.plot_only and not args.plot:
        parser.error('--plot-only needs --plot')
    return args


def _draw(args):
    from sushy_kubevirt.bench import plot
    plot.draw_fleet(history.load(args.history, kind='fleet'), args.plot)
    print('plot: %s' % args.plot)


def main(argv=None):
    args = parse_args(argv)
    if args.plot_only:
        _draw(args)
        return 0
    workdir = args.workdir or tempfile.mkdtemp(prefix='skv-fleet-')
    os.makedirs(workdir, exist_ok=True)
    document = run(args, workdir)
    document['record'] = record(document)
    print(render(document))
    if args.json:
        report.write_json(args.json, document)
    if args.history:
        history.append(args.history, document['record'])
    if args.plot:
        _draw(args)
    return 0 if all(ok or not gated for _, _, ok, gated
                    in document['checks'].values()) else 1


if __name__ == '__main__':
    sys.exit(main())
