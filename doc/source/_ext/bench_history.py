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

"""``.. bench-history-table:: KIND``: a table of the newest benchmark record.

The figures come from the history file (``bench_history`` in ``conf.py``,
relative to it) at build time, so the pages never disagree with it. KIND
is ``quick`` (the records without a ``kind``) or a record ``kind`` such as
``capacity``. The ``:section:`` option picks the table:

``quick``
  ``calls`` (API calls per request kind, warm and live), ``loads``
  (throughput, latency and CPU per request of each load and side),
  ``ratios`` (gated and recorded ratios), ``scale`` (the 1,000-VM figures);
``capacity`` and ``capacity-fair``
  ``steps`` (requests per second at the p99 bound per worker count and
  loop, and the emulator's CPU per request), the default;
``scale``
  ``sizes`` (sync time, KB per VM, peak over steady RSS and GET p50 per
  kind of caches and size), the default.
``fleet``
  ``api`` (the API server's requests per second, this emulator's beside a
  live-reading client's), the default; ``kinds`` (latency per request
  kind), ``steps`` (API calls per step beside the minimum), ``cpu``
  (CPU seconds per process, the waves' times).

Each table's caption names the record: commit, date, machine. The
history file is a dependency of every page that uses the directive.
"""

import json
import os

from docutils import nodes
from docutils.parsers.rst import directives
from docutils import statemachine
from sphinx.util import docutils as sphinx_docutils

_QUICK = 'quick'
_MISSING = r'\-'


def newest(path, kind):
    """The last record of ``kind`` in the JSON-lines file ``path``."""
    found = None
    with open(path, encoding='utf-8') as stream:
        for line in stream:
            if line.strip():
                record = json.loads(line)
                if record.get('kind', _QUICK) == kind:
                    found = record
    if found is None:
        raise ValueError('%s has no record of kind %s' % (path, kind))
    return found


def _number(value, unit=''):
    if value is None:
        return _MISSING
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return '%s%s' % (value, unit)


def _pair(first, second, unit=''):
    return '%s / %s' % (_number(first, unit), _number(second, unit))


def caption(record):
    machine = record.get('machine', {})
    vms = record.get('figures', {}).get('vms')
    return ('Newest %s record: commit %s%s, %s, %s%s CPUs %s, Python %s; '
            'load average %s at its end' % (
                record.get('kind', _QUICK), record['commit'][:7],
                ' (dirty)' if record.get('dirty') else '',
                record['date'], '{:,} VMs, '.format(vms) if vms else '',
                machine.get('nproc', '?'),
                machine.get('cpu', '?'), machine.get('python', '?'),
                _number(record.get('figures', {}).get('load average'))))


def _calls(record):
    calls = record.get('calls', {})
    kinds = sorted({name.split(' ', 1)[1] for name in calls})
    return (['Request kind', 'warm', 'live'],
            [[kind, _number(calls.get('warm ' + kind)),
              _number(calls.get('live ' + kind))] for kind in kinds])


def _loads(record):
    figures = record['figures']
    rows = []
    for load in ('get', 'poll'):
        for side in ('warm', 'fake', 'live'):
            name = '%s %s ' % (load, side)
            rows.append([load, side, _number(figures.get(name + 'rps')),
                         _pair(figures.get(name + 'p50 ms'),
                               figures.get(name + 'p99 ms')),
                         _number(figures.get(name + 'CPU ms/request'))])
    return (['Load', 'Driver', 'req/s', 'p50 / p99 ms', 'CPU ms/request'],
            rows)


def _ratios(record):
    figures = record['figures']
    rows = [[name, _number(value), 'yes']
            for name, value in sorted(record.get('ratios', {}).items())]
    rows += [[name, _number(figures[name]), 'no']
             for name in sorted(figures)
             if name.startswith('warm/') and not isinstance(
                 figures[name], list) and 'per CPU s' not in name]
    return ['Ratio', 'Value', 'Gated'], rows


def _scale(record):
    figures = record['figures']
    prefix = 'scale 1000 '
    return (['Figure at 1,000 VMs', 'Value'],
            [[name[len(prefix):], _number(figures[name])]
             for name in sorted(figures) if name.startswith(prefix)])


def _sizes(record):
    """A ``scale`` record (``--large --history``): per caches and size."""
    figures = record['figures']
    keys = sorted({tuple(name.split(' ', 2)[:2]) for name in figures},
                  key=lambda k: (k[0] != 'namespaces', int(k[1])))
    rows = []
    for caches, vms in keys:
        prefix = '%s %s ' % (caches, vms)
        rows.append(['{:,}'.format(int(vms)), caches] + [
            _number(figures.get(prefix + name)) for name in (
                'sync s', 'KB/VM', 'peak/steady RSS', 'GET p50 ms')])
    return (['VMs', 'Caches', 'sync s', 'KB/VM', 'peak / steady RSS',
             'GET p50 ms'], rows)


def _steps(record):
    figures = record['figures']
    workers = sorted({int(name.split()[1][:-1]) for name in figures
                      if name.startswith('kubevirt ') and
                      name.split()[1].endswith('w')})
    rows = []
    for count in workers:
        for loop in ('closed', 'open'):
            key = '%dw %s req/s' % (count, loop)

            def get(driver):
                return figures.get('%s %s' % (driver, key))

            cpu = '%dw %s CPU ms/request' % (count, loop)
            rows.append([str(count), loop, _number(get('kubevirt')),
                         _number(get('fake')), _number(get('kubevirt/fake')),
                         _pair(get('kubevirt gets'), get('fake gets')),
                         _pair(get('kubevirt peak'), get('fake peak')),
                         _pair(figures.get('kubevirt ' + cpu),
                               figures.get('fake ' + cpu))])
    return (['Workers', 'Load', 'kubevirt', 'fake', 'ratio',
             'GETs kubevirt / fake', 'peak kubevirt / fake',
             'CPU ms/request kubevirt / fake'], rows)


def _fleet_kinds(record):
    """A ``fleet`` record: each request kind's count and latency."""
    figures = record['figures']
    kinds = sorted(name[:-len(' p99 ms')] for name in figures
                   if name.endswith(' p99 ms'))
    return (['Request kind', 'Requests', 'p50 / p99 ms'],
            [[kind, _number(figures.get(kind + ' requests')),
              _pair(figures.get(kind + ' p50 ms'),
                    figures.get(kind + ' p99 ms'))] for kind in kinds])


def _fleet_api(record):
    """Requests/s on the API server: the emulator's, a live reader's."""
    figures = record['figures']
    rows = [[row, _number(figures.get(row + ' requests')),
             _number(figures.get(row + ' ours rps')),
             _number(figures.get(row + ' live rps'))]
            for row in ('reads', 'boot PATCH', 'other writes', 'total')]
    rows.append(['every client of the API server', '',
                 _number(figures.get('all clients API req/s')), ''])
    return (['Redfish requests', 'Count', 'API req/s, this emulator',
             'API req/s, a live-reading client'], rows)


def _fleet_steps(record):
    """Each step's API calls beside the documented minimum."""
    calls, minimum = record.get('calls', {}), record.get('minimum', {})
    return (['Step (one node)', 'API calls', 'Minimum'],
            [[step, _number(calls.get(step)), _number(minimum.get(step))]
             for step in sorted(set(calls) | set(minimum))])


def _fleet_cpu(record):
    """CPU seconds of each process during the load; the waves."""
    figures = record['figures']
    rows = [[name[:-len(' CPU s')], _number(figures[name])]
            for name in sorted(figures) if name.endswith(' CPU s')]
    rows.append(['deploy waves: first insert to all On, s', ', '.join(
        _number(t) for t in figures.get('wave insert to all On s', []))])
    return ['Process', 'CPU s during the load'], rows


TABLES = {(_QUICK, 'calls'): _calls, (_QUICK, 'loads'): _loads,
          (_QUICK, 'ratios'): _ratios, (_QUICK, 'scale'): _scale,
          ('capacity', 'steps'): _steps, ('capacity-fair', 'steps'): _steps,
          ('scale', 'sizes'): _sizes,
          ('fleet', 'kinds'): _fleet_kinds, ('fleet', 'api'): _fleet_api,
          ('fleet', 'steps'): _fleet_steps, ('fleet', 'cpu'): _fleet_cpu}
DEFAULT_SECTIONS = {_QUICK: 'calls', 'capacity': 'steps',
                    'capacity-fair': 'steps', 'scale': 'sizes',
                    'fleet': 'api'}


def list_table(title, header, rows):
    """reStructuredText lines of a ``list-table``."""
    lines = ['.. list-table:: %s' % title, '   :header-rows: 1', '']
    for row in [header] + rows:
        lines.append('   * - %s' % row[0])
        lines.extend('     - %s' % cell for cell in row[1:])
    return lines


class BenchHistoryTable(sphinx_docutils.SphinxDirective):
    """The directive; see the module docstring."""

    required_arguments = 1
    option_spec = {'section': directives.unchanged}

    def run(self):
        kind = self.arguments[0]
        section = self.options.get('section') or DEFAULT_SECTIONS.get(kind)
        table = TABLES.get((kind, section))
        if table is None:
            raise self.error('bench-history-table: no %r table of kind %r; '
                             'known: %s' % (section, kind,
                                            sorted(TABLES)))
        path = os.path.join(self.env.app.confdir,
                            self.config.bench_history)
        self.env.note_dependency(os.path.abspath(path))
        try:
            record = newest(path, kind)
        except (OSError, ValueError) as exc:
            raise self.error('bench-history-table: %s' % exc)
        lines = list_table(caption(record), *table(record))
        container = nodes.container()
        self.state.nested_parse(statemachine.StringList(
            lines, source=path), self.content_offset, container)
        return container.children


def setup(app):
    app.add_config_value('bench_history',
                         '../../benchmarks/history.jsonl', 'env')
    app.add_directive('bench-history-table', BenchHistoryTable)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
