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

"""The trend plot of a benchmark history (matplotlib, Agg backend).

Three panels over the records, in order (:func:`draw_fleet` draws the
``fleet`` records of ``bench.fleet`` instead):

* the gated ratios together: a point per record, the rolling median of
  the last ``window`` records as a line, and the gate as a dashed line of
  the same colour (``threshold`` % below the median of the ``window``
  records before each one), and a ratio's absolute floor
  (:data:`history.FLOORS`) as a dotted one;
* the API calls per request kind of the warm driver, then of the live
  path: a grid with a row per kind and a column per record, each cell the
  count, red where it rose over the previous record, green where it fell.

The x axis names each record by its short commit and its date, thinned to
about :data:`MAX_LABELS` labels. matplotlib comes with ``tox -e bench``.
"""

import math
import statistics

from sushy_kubevirt.bench import history

MAX_LABELS = 12
#: Counts are printed in the cells up to this many records.
MAX_ANNOTATED = 30
_MODES = ('warm', 'live')
#: Cell colours: fewer calls, as many, more; no count.
_CHANGE_COLOURS = ('#a6dba0', '#f7f7f7', '#f4a582')
_MISSING_COLOUR = '#d9d9d9'


def _series(records, section, name):
    return [entry.get(section, {}).get(name) for entry in records]


def rolling_median(values, window):
    """Median of each value and the ``window - 1`` before it (None-free)."""
    result = []
    for index in range(len(values)):
        seen = [v for v in values[max(0, index - window + 1):index + 1]
                if v is not None]
        result.append(statistics.median(seen) if seen else None)
    return result


def gate_line(values, window, threshold):
    """For each record, the ratio below which the gate fails it."""
    result = []
    for index in range(len(values)):
        seen = [v for v in values[max(0, index - window):index]
                if v is not None]
        result.append(statistics.median(seen) * (1 - threshold / 100.0)
                      if seen else None)
    return result


def labels(records):
    """Short x labels: ``commit`` over ``MM-DD`` of each record."""
    return ['%s\n%s' % ((entry.get('commit') or '?')[:7],
                        (entry.get('date') or '')[5:10])
            for entry in records]


def ticks(count, most=MAX_LABELS):
    """Indices of the labelled records: at most ``most``, evenly."""
    return list(range(0, count, max(1, math.ceil(count / most))))


def _xs(values):
    return [i for i, v in enumerate(values) if v is not None]


def _line(axes, values, style, **kwargs):
    xs = _xs(values)
    axes.plot(xs, [values[i] for i in xs], style, **kwargs)


def _ratios(axes, records, window, threshold):
    names = sorted({n for entry in records for n in entry.get('ratios', {})})
    top = 1
    for index, name in enumerate(names):
        color = 'C%d' % index
        values = _series(records, 'ratios', name)
        _line(axes, values, 'o', markersize=4, color=color, label=name)
        _line(axes, rolling_median(values, window), '-', color=color,
              linewidth=1.5)
        _line(axes, gate_line(values, window, threshold), '--', color=color,
              linewidth=1, alpha=0.7)
        if name in history.FLOORS:
            axes.axhline(history.FLOORS[name], color=color, linestyle=':',
                         linewidth=1)
        top = max([top] + [v for v in values if v is not None])
    axes.set_ylim(0, top * 1.25)
    axes.set_title(
        'Gated ratios (higher is better): points, rolling median of %d, '
        'dashed: the gate (%.0f %% below the median of the %d before; '
        'dotted: a floor)' % (window, threshold, window), fontsize=9)
    if names:
        axes.legend(fontsize=8, loc='lower left', ncol=len(names))
    axes.grid(True, alpha=0.3)


def _calls(axes, records, mode, colormap):
    """A grid of ``mode``'s counts; returns the kinds shown."""
    prefix = mode + ' '
    kinds = sorted({n[len(prefix):] for entry in records
                    for n in entry.get('calls', {}) if n.startswith(prefix)})
    rows = [_series(records, 'calls', prefix + kind) for kind in kinds]
    change = [[math.nan if v is None else 0.0 for v in row] for row in rows]
    for row, out in zip(rows, change):
        last = None
        for index, value in enumerate(row):
            if value is None:
                continue
            if last is not None and value != last:
                out[index] = 1.0 if value > last else -1.0
            last = value
    if kinds:
        axes.imshow(change, cmap=colormap, vmin=-1, vmax=1, aspect='auto',
                    interpolation='nearest')
    if len(records) <= MAX_ANNOTATED:
        for y, row in enumerate(rows):
            for x, value in enumerate(row):
                if value is not None:
                    axes.text(x, y, '%g' % value, ha='center',
                              va='center', fontsize=7)
    axes.set_yticks(range(len(kinds)))
    axes.set_yticklabels(kinds, fontsize=8)
    axes.set_title('API calls per request, %s (red: more than the record '
                   'before, green: fewer)' % mode, fontsize=9)
    return kinds


def draw(records, output, window=5, threshold=30.0):
    """Write the trend plot of ``records`` to ``output`` (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import colors
    from matplotlib import pyplot

    heights = [4] + [
        max(1, len({n for entry in records for n in entry.get('calls', {})
                    if n.startswith(mode + ' ')})) * 0.32 + 0.6
        for mode in _MODES]
    figure, grid = pyplot.subplots(
        3, 1, sharex=True, figsize=(12, sum(heights) + 1.2),
        gridspec_kw={'height_ratios': heights})
    _ratios(grid[0], records, window, threshold)
    colormap = colors.ListedColormap(_CHANGE_COLOURS)
    colormap.set_bad(_MISSING_COLOUR)
    for axes, mode in zip(grid[1:], _MODES):
        _calls(axes, records, mode, colormap)
    shown = ticks(len(records))
    names = labels(records)
    grid[-1].set_xticks(shown)
    grid[-1].set_xticklabels([names[i] for i in shown], fontsize=8)
    grid[-1].set_xlim(-0.5, len(records) - 0.5)
    grid[-1].set_xlabel('record (commit, date); two records of one commit '
                        'sit side by side', fontsize=8)
    figure.suptitle('sushy-kubevirt benchmark history: %d records'
                    % len(records), fontsize=11)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(output, dpi=80, metadata={'Software': None})
    pyplot.close(figure)
    return output


#: The fleet plot's panels: title, then (label, figure name) per line.
FLEET_PANELS = (
    ('Kubernetes API requests/s (log)', (
        ('emulator', 'emulator API req/s'),
        ('a live-reading client, same load', 'live-reading API req/s'),
        ('all clients', 'all clients API req/s'))),
    ('Emulator p99, ms', (
        ('GET System', 'get_system p99 ms'), ('InsertMedia', 'insert p99 ms'),
        ('boot PATCH', 'boot_once p99 ms'), ('Reset On', 'reset_on p99 ms'))),
    ('CPU s during the load', (
        ('kube-apiserver', 'kube-apiserver CPU s'), ('etcd', 'etcd CPU s'),
        ('virt-controller', 'virt-controller CPU s'),
        ('emulator', 'emulator (gunicorn) CPU s'))),
    ('Deploy wave: first insert to all On, s (median)', (
        ('wave', 'wave insert to all On s'),)),
)


def _median_of(value):
    if isinstance(value, list):
        value = [v for v in value if v is not None]
        return statistics.median(value) if value else None
    return value


def draw_fleet(records, output):
    """Write the trend of ``fleet`` records (``bench.fleet``) to ``output``."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    figure, grid = pyplot.subplots(len(FLEET_PANELS), 1, sharex=True,
                                   figsize=(12, 2.6 * len(FLEET_PANELS) + 1))
    for axes, (title, lines) in zip(grid, FLEET_PANELS):
        for label, name in lines:
            values = [_median_of(v) for v in _series(records, 'figures',
                                                     name)]
            _line(axes, values, 'o-', markersize=4, label=label)
        if title.endswith('(log)'):
            axes.set_yscale('log')
        axes.set_title(title, fontsize=9)
        axes.legend(fontsize=8, loc='upper left')
        axes.grid(True, alpha=0.3)
    shown = ticks(len(records))
    names = ['%s\n%s VMs' % (label, (entry.get('figures') or {}).get('vms'))
             for label, entry in zip(labels(records), records)]
    grid[-1].set_xticks(shown)
    grid[-1].set_xticklabels([names[i] for i in shown], fontsize=8)
    grid[-1].set_xlim(-0.5, len(records) - 0.5)
    figure.suptitle('sushy-kubevirt fleet under Ironic: %d records'
                    % len(records), fontsize=11)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(output, dpi=80, metadata={'Software': None})
    pyplot.close(figure)
    return output
