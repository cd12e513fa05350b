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

"""The table of ``bench.backends``: one column per backend, then faults."""


def _get(run, *keys):
    value = run
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _fmt(value):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.3g' % value if abs(value) < 100 else '%.0f' % value
    return str(value)


def _workers(run, key):
    per = _get(run, 'sync', 'workers') or {}
    return ' / '.join(_fmt(w.get(key)) for w in per.values())


def _rss(run):
    idle = _get(run, 'sync', 'rss_idle_kb') or {}
    steady = _get(run, 'rss', 'workers_kb') or {}
    return ' / '.join('%d->%d' % (idle.get(p, 0) // 1024, kb // 1024)
                      for p, kb in steady.items())


def _reset(run, kind):
    entry = _get(run, 'resets', kind)
    if not entry:
        return '-'
    return '%s / %s  %s' % (entry['mean'], entry['max'],
                            _statuses(entry['statuses']))


def _statuses(statuses):
    return ','.join('%sx%d' % (code, n) for code, n in statuses.items())


ROWS = (
    ('VMs / namespaces', lambda r: '%d / %d' % (r['vms'], r['namespaces'])),
    ('control plane start s', lambda r: _fmt(_get(r, 'start',
                                                  'control_plane_s'))),
    ('seeding s (VMs/s)', lambda r: '%s (%s)' % (
        _fmt(_get(r, 'start', 'seed_s')),
        _fmt(_get(r, 'start', 'seed_vms_per_s')))),
    ('cluster start total s', lambda r: _fmt(_get(r, 'start', 'total_s'))),
    ('control plane RSS MB after seeding', lambda r: ', '.join(
        '%s %d' % item for item in sorted(
            (_get(r, 'start', 'control_plane_rss_mb') or {}).items()))
     or '-'),
    ('emulator up (GET /redfish/v1/) s',
     lambda r: _fmt(r.get('emulator_ready_s'))),
    ('first GET /Systems s, per worker',
     lambda r: _workers(r, 'first_answer_s')),
    ('informers synced s, per worker', lambda r: _workers(r, 'synced_s')),
    ('lists all N s, per worker', lambda r: _workers(r, 'listed_s')),
    ('API calls of 10 GETs/worker after sync',
     lambda r: _fmt(sum((_get(r, 'sync', 'quiet_calls') or {}).values()))),
    ('RSS MB per worker (idle->steady)', _rss),
    ('KB per VM (per worker)', lambda r: _fmt(_get(r, 'rss', 'kb_per_vm'))),
    ('warm GET /Systems/{id} p50 ms',
     lambda r: _fmt(_get(r, 'warm_get', 'p50_ms'))),
    ('warm GET p99 ms', lambda r: _fmt(_get(r, 'warm_get', 'p99_ms'))),
    ('warm GET req/s (requests, errors)', lambda r: '%s (%s, %s)' % (
        _fmt(_get(r, 'warm_get', 'rps')),
        _fmt(_get(r, 'warm_get', 'requests')),
        _fmt(_get(r, 'warm_get', 'errors')))),
    ('load average 1 min (start / GETs)', lambda r: '%s / %s' % (
        _fmt((_get(r, 'start', 'loadavg') or [None])[0]),
        _fmt((_get(r, 'warm_get', 'loadavg') or [None])[0]))),
    ('API calls per warm GET',
     lambda r: _fmt(_get(r, 'warm_get', 'api_calls_per_request'))),
    ('API calls per Reset On (mean/max)', lambda r: _reset(r, 'On')),
    ('API calls per Reset ForceOff', lambda r: _reset(r, 'ForceOff')),
)


def _answers(answers):
    parts = []
    for kind, entry in sorted((answers or {}).items()):
        text = '%s %s' % (kind, _statuses(entry['statuses']))
        if entry.get('retry_after'):
            text += ' Retry-After %s' % ','.join(entry['retry_after'])
        if 'p50_ms' in entry:
            text += ' (p50 %s ms, max %s ms)' % (_fmt(entry['p50_ms']),
                                                 _fmt(entry['max_ms']))
        parts.append(text)
    return '; '.join(parts) or '-'


def _per_worker(mapping, key=None):
    values = (mapping or {}).values()
    return ' / '.join(_fmt(v.get(key) if key else v) for v in values)


def _faults(run):
    faults = run.get('faults')
    if not faults:
        return []
    lines = ['', 'Faults on %s (%d VMs):' % (run['backend'], run['vms'])]
    add = lines.append
    add('  baseline: %s' % _answers(faults.get('baseline')))
    restart = faults.get('restart') or {}
    add('  restart: down %s s; during: %s' % (
        _fmt(restart.get('down_s')), _answers(restart.get('outage'))))
    add('    after ready: Reset works in %s s, a VM change shows in %s s '
        '(per worker); relists / re-watches: %s'
        % (_fmt(restart.get('reset_works_s')),
           _per_worker(_get(restart, 'visible_s', 'workers')),
           _counters(restart)))
    add('    recovering: %s' % _answers(restart.get('recovering')))
    comp = faults.get('compaction') or {}
    add('  compaction at %s, %s admin writes in %s s: seen in %s s '
        '(missing %s), next change in %s s; relists / re-watches: %s'
        % (_fmt(comp.get('revision')), _fmt(comp.get('writes')),
           _fmt(comp.get('burst_s')),
           _per_worker(comp.get('converged'), 'seen_s'),
           _per_worker(comp.get('converged'), 'missing'),
           _per_worker(_get(comp, 'visible_s', 'workers')),
           _counters(comp)))
    add('    answers: %s' % _answers(comp.get('answers')))
    rbac = faults.get('rbac') or {}
    add('  RBAC revoked, cache: %s' % _answers(rbac.get('revoked_cached')))
    add('    watches broken: %s' % _answers(
        rbac.get('revoked_watches_broken')))
    add('    restored: Reset works in %s s, reads OK in %s s, synced in '
        '%s s; relists / re-watches: %s'
        % (_fmt(rbac.get('reset_works_s')), _fmt(rbac.get('reads_ok_s')),
           _fmt(rbac.get('synced_s')), _counters(rbac)))
    for name in ('restart', 'compaction', 'rbac'):
        if (faults.get(name) or {}).get('error'):
            add('  %s failed: %s' % (name, faults[name]['error']))
    return lines


def _counters(scenario):
    per = scenario.get('informers') or {}
    return ' / '.join('%d,%d' % tuple(v.values()) for v in per.values())


def render(runs):
    """The side-by-side table, then each backend's fault figures."""
    width = max(len(label) for label, _ in ROWS) + 2
    cells = [[fn(run) for run in runs] for _, fn in ROWS]
    cols = [max([len(run['backend'])] + [len(row[i]) for row in cells]) + 2
            for i, run in enumerate(runs)]
    lines = [''.ljust(width) + ''.join(
        run['backend'].ljust(cols[i]) for i, run in enumerate(runs))]
    for (label, _), row in zip(ROWS, cells):
        lines.append(label.ljust(width) + ''.join(
            cell.ljust(cols[i]) for i, cell in enumerate(row)))
    for run in runs:
        lines += _faults(run)
    return '\n'.join(line.rstrip() for line in lines)
