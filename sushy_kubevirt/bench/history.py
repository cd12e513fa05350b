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

"""The benchmark history: one JSON line per ``--quick`` run, and its gate.

A record holds ``commit``, ``date``, ``machine``, ``figures`` (everything
measured, absolute times included), ``ratios`` (side-by-side, higher is
better) and ``calls`` (API calls per request kind, exact). Only ratios and
calls are gated: the newest record regresses when a ratio is more than
``threshold`` % below the median of the previous ``window`` records, when
an API-call count is above its previous value, or when a request failed.
A ratio named in :data:`FLOORS` also regresses below its floor, whatever
its baseline: a target, not a trend.
A record may carry ``accepted`` (``--quick --history FILE --accept
REASON``), why a change made it worse on purpose: its ratio and call
regressions are then shown as accepted and do not fail (failed requests
and ratios below their floor still do).

``python -m sushy_kubevirt.bench history FILE`` prints the trend and exits
3 on a regression of the newest record (0 otherwise).
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

from sushy_kubevirt.bench import report

REGRESSED = 3
WINDOW = 5
THRESHOLD = 30.0
#: Two API-call counts closer than this are equal (they are means of
#: whole numbers over a few requests, rounded to 3 decimals).
_EPSILON = 1e-6
#: Absolute floors of gated ratios, ``{name: floor}``: the newest record
#: regresses when such a ratio is below its floor (or not measured), even
#: with no baseline and even when accepted.
FLOORS = {
    # Ironic's capacity mix: the emulator's CPU per request at most half
    # the fake driver's (issue 38).
    'warm/fake capacity per CPU s': 2.0,
    # A refused $expand costs at most two warm System GETs (issue 38).
    'refused $expand/warm get per CPU s': 0.5,
}
#: Figures the trend table shows after the gated rows.
SHOWN = ('warm/fake get req/s best', 'warm/fake poll req/s best',
         'capacity warm CPU ms/request', 'capacity fake CPU ms/request',
         'warm/ceiling get req/s median pair',
         'warm/live get', 'warm/live poll', 'get warm p50 ms',
         'get warm p99 ms', 'poll warm p50 ms', 'poll warm p99 ms',
         'scale 1000 sync s', 'scale 1000 KB/VM', 'duration s')


def _git(*argv):
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        done = subprocess.run(('git',) + argv, cwd=here, capture_output=True,
                              text=True, timeout=10, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


#: Changes here do not make a record ``dirty``: the history and its plot.
_NOT_CODE = ('benchmarks', 'doc/source/_static')


def provenance():
    """``commit``, ``dirty``, ``date`` and ``machine`` of a new record."""
    status = _git('status', '--porcelain', '--untracked-files=no', '--',
                  ':(top)', *(':(top,exclude)' + p for p in _NOT_CODE))
    machine = report.machine()
    return {
        'commit': _git('rev-parse', 'HEAD'),
        'dirty': bool(status) if status is not None else None,
        'date': datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%SZ'),
        'machine': {key: machine[key] for key in ('nproc', 'cpu', 'python')},
    }


def _run_figures(prefix, run, figures):
    total = run['total']
    for key in ('rps', 'p50_ms', 'p99_ms'):
        figures['%s %s' % (prefix, key.replace('_', ' '))] = total[key]


def _calls(mode, counted, calls, failures):
    errors = 0
    for kind, result in (counted or {}).items():
        calls['%s %s' % (mode, kind)] = result['total']
        errors += result['errors']
        failures += result['failures']
    return errors


def _mix(found, ratios, figures, failures):
    """Ironic's capacity mix in turns (:func:`quick.mix`); its errors.

    Gated: the ratio (it has a floor) and every object the mix did not
    leave as it found it. This driver's failed requests are recorded
    (``capacity warm errors``, ``failures``) but not gated: about 2 % of
    the InsertMedias that re-insert into a tray ejected a moment before
    answer 404 (benchmarks.rst, "Capacity"), a known bug.
    """
    if not found:
        return 0
    ratios['warm/fake capacity per CPU s'] = found['cpu']
    figures['warm/fake capacity per CPU s pairs'] = found['pairs_cpu']
    figures['warm/fake capacity req/s median pair'] = found['rps']
    for mode in ('warm', 'fake'):
        figures['capacity %s CPU ms/request' % mode] = found['cpu_ms'][mode]
        figures['capacity %s runs CPU ms/request' % mode] = (
            found['runs_cpu_ms'][mode])
        _run_figures('capacity %s' % mode, found[mode], figures)
    figures['capacity warm API calls/request'] = found['api_calls']
    figures['capacity vmedia'] = found['vmedia']
    figures['capacity warm errors'] = found['errors']
    figures['capacity fake errors'] = found['other_errors']
    figures['capacity objects not as found'] = len(found['changed'])
    failures += found['failures'] + ['not as found: %s' % name
                                     for name in found['changed']]
    return len(found['changed'])


def record(document):
    """The history record of a ``--quick`` run's document."""
    figures, ratios, calls, errors, failures = {}, {}, {}, 0, []
    for kind, found in document['load'].items():
        ratios['warm/fake %s per CPU s' % kind] = found['cpu']
        figures['warm/fake %s per CPU s pairs' % kind] = found['pairs_cpu']
        figures['warm/fake %s req/s best' % kind] = found['best']
        figures['warm/fake %s req/s median pair' % kind] = found['rps']
        figures['warm/fake %s req/s pairs' % kind] = found['pairs_rps']
        for mode, values in found['runs_rps'].items():
            figures['%s %s runs rps' % (kind, mode)] = values
        for mode, value in found['cpu_ms'].items():
            figures['%s %s CPU ms/request' % (kind, mode)] = value
            figures['%s %s runs CPU ms/request' % (kind, mode)] = (
                found['runs_cpu_ms'][mode])
        calls['warm %s (load)' % kind] = found['api_calls']
        figures['fake %s errors' % kind] = found['other_errors']
        for mode in ('warm', 'fake'):
            _run_figures('%s %s' % (kind, mode), found[mode], figures)
        errors += found['errors']
        failures += found['failures']
        live = document['live']['load'][kind]
        _run_figures('%s live' % kind, live, figures)
        errors += live['total']['errors']
        failures += live['failures']
        figures['warm/live %s' % kind] = (
            round(found['warm']['total']['rps'] / live['total']['rps'], 1)
            if live['total']['rps'] else None)
    for kind, found in (document.get('ceiling') or {}).items():
        # The emulator's share of what Flask and its server allow.
        ratios['warm/ceiling %s per CPU s' % kind] = found['cpu']
        figures['warm/ceiling %s req/s median pair' % kind] = found['rps']
        figures['warm/ceiling %s req/s best' % kind] = found['best']
        figures['warm/ceiling %s req/s pairs' % kind] = found['pairs_rps']
        figures['%s ceiling runs rps' % kind] = found['runs_rps']['fake']
        figures['%s ceiling CPU ms/request' % kind] = found['cpu_ms']['fake']
        _run_figures('%s ceiling' % kind, found['fake'], figures)
        figures['ceiling %s errors' % kind] = found['other_errors']
        errors += found['errors']
        failures += found['failures']
    errors += _mix(document.get('mix'), ratios, figures, failures)
    for mode in ('warm', 'live'):
        errors += _calls(mode, document[mode].get('calls'), calls, failures)
    for mode in ('warm', 'fake', 'live'):
        run = document[mode]
        figures['%s ready s' % mode] = run.get('ready_s')
        figures['%s RSS MB' % mode] = round(run['rss_kb'] / 1024.0, 1)
    figures['warm sync s'] = document['warm'].get('sync_s')
    scale = document.get('scale')
    if scale:
        prefix = 'scale %d' % scale['vms']
        figures[prefix + ' sync s'] = scale.get('sync_s')
        figures[prefix + ' ready s'] = scale.get('ready_s')
        figures[prefix + ' RSS MB'] = round(scale['rss_kb'] / 1024.0, 1)
        figures[prefix + ' KB/VM'] = round(
            (scale['rss_kb'] - scale['rss_idle_kb']) / scale['vms'], 1)
        for name in ('serial', 'pr32'):
            total = scale['workloads'][name]['total']
            figures['%s %s p50 ms' % (prefix, name)] = total['p50_ms']
            figures['%s %s p99 ms' % (prefix, name)] = total['p99_ms']
            errors += total['errors']
            failures += scale['workloads'][name]['failures']
    expand = document.get('expand')
    if expand:
        ratios['refused $expand/warm get per CPU s'] = expand['ratio']
        for side, values in expand['cpu_ms'].items():
            figures['expand %s CPU ms/request' % side] = (
                expand['least_cpu_ms'][side])
            figures['expand %s runs CPU ms/request' % side] = values
        errors += expand['errors']
        failures += expand['failures']
    figures['load average'] = round(os.getloadavg()[0], 2)
    figures['duration s'] = document.get('duration_s')
    return dict(provenance(), figures=figures, ratios=ratios, calls=calls,
                errors=errors, failures=failures[:5], quick=document['quick'])


def load(path, kind=None):
    """The ``--quick`` records of a history file, oldest first.

    [] if it is absent. Other benchmarks' records (``kind``, such as
    ``bench.capacity``'s) share the file but are neither shown nor gated;
    ``kind`` names the records to load instead.
    """
    if not os.path.exists(path):
        return []
    with open(path) as history:
        records = [json.loads(line) for line in history if line.strip()]
    return [entry for entry in records if entry.get('kind') == kind]


def load_kind(path, kind):
    """The records of ``kind`` (such as ``capacity``), oldest first."""
    with open(path) as history:
        records = [json.loads(line) for line in history if line.strip()]
    return [entry for entry in records if entry.get('kind') == kind]


def append(path, entry):
    with open(path, 'a') as history:
        history.write(json.dumps(entry, sort_keys=True) + '\n')


def _previous_value(previous, name):
    for entry in reversed(previous):
        if name in entry.get('calls', {}):
            return entry['calls'][name]
    return None


def under_floor(name, value):
    """Whether ratio ``name`` is below its :data:`FLOORS` entry (or None)."""
    floor = FLOORS.get(name)
    return floor is not None and (value is None or value < floor)


def verdicts(records, window=WINDOW, threshold=THRESHOLD):
    """``{(section, name): (baseline, regressed)}`` for the newest record.

    The baseline of a ratio is the median of the previous ``window``
    records that have it; of a call count, its previous value. A name the
    newest record lacks (or has as null) regresses when it has a baseline.
    A ratio below its floor (:func:`under_floor`) regresses too.
    """
    newest, previous = records[-1], records[:-1]
    found = {}
    recent = previous[-window:] if window > 0 else []
    names = set(newest.get('ratios', {}))
    names.update(*(entry.get('ratios', {}) for entry in recent))
    for name in sorted(names):
        values = [entry['ratios'][name] for entry in recent
                  if entry.get('ratios', {}).get(name) is not None]
        baseline = statistics.median(values) if values else None
        value = newest.get('ratios', {}).get(name)
        regressed = baseline is not None and (
            value is None or value < baseline * (1 - threshold / 100.0))
        found[('ratios', name)] = (baseline,
                                   regressed or under_floor(name, value))
    names = set(newest.get('calls', {}))
    if previous:
        names.update(previous[-1].get('calls', {}))
    for name in sorted(names):
        baseline = _previous_value(previous, name)
        value = newest.get('calls', {}).get(name)
        regressed = baseline is not None and (
            value is None or value > baseline + _EPSILON)
        found[('calls', name)] = (baseline, regressed)
    return found


def regressions(records, window=WINDOW, threshold=THRESHOLD):
    """Sentences describing each regression of the newest record.

    An accepted record's ratio and call regressions are not listed, save
    a ratio below its floor.
    """
    if not records:
        return []
    newest = records[-1]
    found = []
    for (section, name), (baseline, regressed) in verdicts(
            records, window, threshold).items():
        value = newest.get(section, {}).get(name)
        floored = section == 'ratios' and under_floor(name, value)
        if not regressed or (newest.get('accepted') and not floored):
            continue
        if floored:
            found.append('ratio %r: %s is below its floor %g' % (
                name, value if value is None else '%.3g' % value,
                FLOORS[name]))
        elif value is None:
            found.append('%s %r: not measured (was %s)'
                         % (section, name, baseline))
        elif section == 'ratios':
            found.append('ratio %r: %.3g is %.0f %% below the median %.3g '
                         'of the previous records (threshold %.0f %%)' % (
                             name, value, 100.0 * (1 - value / baseline),
                             baseline, threshold))
        else:
            found.append('API calls %r: %s, up from %s'
                         % (name, value, baseline))
    if newest.get('errors'):
        found.append('%d requests failed' % newest['errors'])
    return found


def _label(entry):
    commit = (entry.get('commit') or 'unknown')[:7]
    return commit + ('+' if entry.get('dirty') else '')


def trend(records, window=WINDOW, threshold=THRESHOLD, columns=8):
    """The trend table: gated rows, then a few figures (not gated)."""
    shown = records[-columns:]
    found = verdicts(records, window, threshold) if records else {}
    accepted = records and records[-1].get('accepted')
    headers = ['', 'name'] + [_label(e) for e in shown] + ['baseline',
                                                           'verdict']
    rows = []
    for (section, name), (baseline, regressed) in found.items():
        values = [e.get(section, {}).get(name) for e in shown]
        if section == 'ratios' and under_floor(name, values[-1]):
            verdict = 'BELOW FLOOR %g' % FLOORS[name]
        elif regressed:
            verdict = 'accepted' if accepted else 'REGRESSED'
        else:
            verdict = 'ok' if baseline is not None else 'new'
        rows.append([section, name] + values + [baseline, verdict])
    names = [n for n in SHOWN if any(n in e.get('figures', {})
                                     for e in shown)]
    rows += [['figures', name] + [e.get('figures', {}).get(name)
                                  for e in shown] + [None, 'not gated']
             for name in names]
    rows.append(['', 'errors'] + [e.get('errors') for e in shown]
                + [None, ''])
    dates = '\n'.join('%s  %s  %s' % (_label(e), e.get('date'),
                                      e.get('machine', {}).get('cpu'))
                      for e in shown)
    rows = [row[:2] + [_round(v) for v in row[2:]] for row in rows]
    return '%s\n\n%s' % (report.table(headers, rows), dates)


def _round(value):
    if isinstance(value, float):
        return '%.4g' % value
    return value


def check(records, window=WINDOW, threshold=THRESHOLD, out=None):
    """Print the trend and the verdict; return the exit status."""
    out = out or sys.stdout
    print(trend(records, window, threshold), file=out)
    found = regressions(records, window, threshold)
    if found:
        print('\nREGRESSION in the newest record (%s):' % _label(
            records[-1]), file=out)
        for sentence in found:
            print('  ' + sentence, file=out)
        return REGRESSED
    if records and records[-1].get('accepted'):
        print('\naccepted in the newest record (%s): %s' % (
            _label(records[-1]), records[-1]['accepted']), file=out)
    print('\nno regression in the newest record (%d records; ratios: '
          '%.0f %% below the median of the previous %d; API calls: above '
          'the previous)' % (len(records), threshold, window), file=out)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench history',
        description='Print the trend of a benchmark history and check its '
        'newest record: exit %d on a regression, 0 otherwise.' % REGRESSED)
    parser.add_argument('file', help='history, one JSON record a line')
    parser.add_argument('--plot', metavar='OUT.png',
                        help='draw one panel per ratio and API-call count')
    parser.add_argument('--window', type=int, default=WINDOW,
                        help='previous records whose median is a ratio\'s '
                        'baseline, and the rolling median of the plot')
    parser.add_argument('--threshold', type=float, default=THRESHOLD,
                        help='percent below its baseline a ratio may fall')
    args = parser.parse_args(argv)
    records = load(args.file)
    if not records:
        parser.error('%s holds no record' % args.file)
    if args.plot:
        from sushy_kubevirt.bench import plot
        try:
            plot.draw(records, args.plot, args.window, args.threshold)
        except ImportError as exc:
            parser.error('--plot needs matplotlib (tox -e bench installs '
                         'it): %s' % exc)
        print('plot: %s' % args.plot)
    return check(records, args.window, args.threshold)
