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

"""Tables, ratios and the JSON file of a benchmark run."""

import json
import os
import platform

from sushy_kubevirt.bench import stats
from sushy_kubevirt import files


def machine():
    """Where the figures came from."""
    model = None
    try:
        with open('/proc/cpuinfo') as cpuinfo:
            for line in cpuinfo:
                if line.startswith('model name'):
                    model = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    return {'nproc': os.cpu_count(), 'cpu': model,
            'python': platform.python_version(),
            'platform': platform.platform()}


def _fmt(value, digits=1):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.*f' % (digits, value)
    return str(value)


def table(headers, rows):
    """A plain-text table, columns sized to fit."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = '  '.join('%%-%ds' % w for w in widths)
    out = [line % tuple(headers), line % tuple('-' * w for w in widths)]
    out += [line % tuple(r) for r in cells]
    return '\n'.join(out)


def _profile(run):
    if run['mode'] == 'fake':
        return 'none'
    return '%d ms%s' % (run['latency_ms'], ', %s qps' % run['max_qps']
                        if run['max_qps'] else '')


def _load(run, workload):
    result = run.get('workloads', {}).get(workload)
    if not result:
        return ['-'] * 5
    total = result['total']
    return [total['p50_ms'], total['p95_ms'], total['p99_ms'], total['rps'],
            total['errors']]


def runs_table(runs, workloads):
    headers = ['api', 'server', 'mode', 'ready s', 'sync s', 'RSS MB']
    for workload in workloads:
        headers += ['%s p50' % workload, 'p95', 'p99', 'req/s', 'err']
    headers += ['lag ms']
    rows = []
    for run in runs:
        lags = sorted(x for x in run.get('lag_s') or () if x is not None)
        row = [_profile(run), run['server'], run['mode'], run.get('ready_s'),
               run.get('sync_s'), run.get('rss_kb', 0) / 1024.0]
        for workload in workloads:
            row += _load(run, workload)
        row.append(stats.percentile(lags, 0.5) * 1000.0 if lags else None)
        rows.append(row)
    return table(headers, rows)


def calls_table(runs):
    """API calls per Redfish request kind, one column per driver run.

    The kinds are counted one request at a time (a poll is 5 GETs); the
    workloads' figures are totals over all their requests.
    """
    runs = [r for r in runs if r.get('calls')]
    if not runs:
        return ''
    kinds = list(runs[0]['calls'])
    headers = ['request'] + ['%s %s %s' % (r['server'][:4], r['mode'],
                                           _profile(r)) for r in runs]
    rows = []
    for kind in kinds:
        cells = []
        for r in runs:
            calls = r['calls'].get(kind)
            cells.append(calls and '%s (max %s)' % (_fmt(calls['total'], 2),
                                                    calls['max']))
        rows.append([kind] + cells)
    for workload in ('pr32', 'ironic', 'mixed'):
        rows.append([workload] + [
            r['workloads'].get(workload, {}).get('api_calls_per_request')
            for r in runs])
    return table(headers, rows)


def _rps(run, workload):
    return (run.get('workloads', {}).get(workload) or {}).get(
        'total', {}).get('rps')


def ratios(runs, workloads=('ironic', 'pr32')):
    """warm / fake and warm / live throughput per server and API profile."""
    found = {}
    fake = {r['server']: r for r in runs if r['mode'] == 'fake'}
    for warm in (r for r in runs if r['mode'] == 'warm'):
        key = '%s, %s' % (warm['server'], _profile(warm))
        live = [r for r in runs if r['mode'] == 'live'
                and r['server'] == warm['server']
                and r['latency_ms'] == warm['latency_ms']]
        for workload in workloads:
            entry = found.setdefault(key, {})
            if warm['server'] in fake:
                entry['warm/fake %s' % workload] = stats.ratio(
                    _rps(warm, workload), _rps(fake[warm['server']],
                                               workload))
            if live:
                entry['warm/live %s' % workload] = stats.ratio(
                    _rps(warm, workload), _rps(live[0], workload))
    return found


def ratios_text(found):
    lines = []
    for key, entry in found.items():
        lines.append('%s: %s' % (key, ', '.join(
            '%s = %s' % (k, _fmt(v, 2)) for k, v in entry.items())))
    return '\n'.join(lines)


def scale_table(results):
    """Sync, RSS (per VM over idle, peak, marginal between sizes), GETs."""
    headers = ['VMs', 'ns', 'caches', 'seed s', 'ready s', 'sync s',
               'RSS idle MB', 'RSS MB', 'peak MB', 'KB/VM', 'marginal',
               'serial p50', 'p95', 'p99', 'pr32 p50', 'p95', 'p99',
               'req/s']
    rows, previous = [], {}
    for r in results:
        scope = r.get('scope', 'namespaces')
        per_vm = (r['rss_kb'] - r['rss_idle_kb']) / r['vms']
        before = previous.get(scope)
        marginal = before and (r['rss_kb'] - before['rss_kb']) / (
            r['vms'] - before['vms'])
        serial = r['workloads']['serial']['total']
        pr32 = r['workloads']['pr32']['total']
        peak = r.get('rss_peak_kb')
        rows.append([r['vms'], r['namespaces'], scope, r['seed_s'],
                     r['ready_s'], r.get('sync_s'), r['rss_idle_kb'] / 1024.0,
                     r['rss_kb'] / 1024.0, peak and peak / 1024.0, per_vm,
                     marginal, serial['p50_ms'], serial['p95_ms'],
                     serial['p99_ms'], pr32['p50_ms'], pr32['p95_ms'],
                     pr32['p99_ms'], pr32['rps']])
        previous[scope] = r
    return table(headers, rows)


def scale_record(results):
    """A ``scale`` history record: per caches and size, the figures."""
    figures = {}
    for r in results:
        name = '%s %d' % (r.get('scope', 'namespaces'), r['vms'])
        figures[name + ' sync s'] = r.get('sync_s')
        figures[name + ' KB/VM'] = round(
            (r['rss_kb'] - r['rss_idle_kb']) / r['vms'], 1)
        if r.get('rss_peak_kb'):
            figures[name + ' peak/steady RSS'] = round(
                r['rss_peak_kb'] / r['rss_kb'], 2)
        figures[name + ' GET p50 ms'] = \
            r['workloads']['serial']['total']['p50_ms']
    return figures


def write_json(path, document):
    files.replace(path, json.dumps(document, indent=2, sort_keys=True)
                  + '\n')
