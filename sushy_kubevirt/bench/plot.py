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

One panel per ratio and per API-call count: a point per record, in order,
and the rolling median of the last ``window`` records as a line; on ratio
panels a dashed line where the gate would fail a record (``threshold`` %
below the median of the ``window`` records before it). matplotlib comes
with ``tox -e bench``.
"""

import statistics

COLUMNS = 4


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


def _line(axes, values, style, **kwargs):
    xs = [i for i, v in enumerate(values) if v is not None]
    axes.plot(xs, [values[i] for i in xs], style, **kwargs)


def _panel(axes, records, section, name, window, threshold):
    values = _series(records, section, name)
    xs = [i for i, v in enumerate(values) if v is not None]
    axes.plot(xs, [values[i] for i in xs], 'o', markersize=4,
              color='tab:blue' if section == 'ratios' else 'tab:green')
    _line(axes, rolling_median(values, window), '-', color='tab:orange',
          linewidth=1.5)
    if section == 'ratios':
        _line(axes, gate_line(values, window, threshold), '--',
              color='tab:red', linewidth=1)
        top = max([v for v in values if v is not None] or [1])
        axes.set_ylim(0, top * 1.2)
    axes.set_title(('ratio: ' if section == 'ratios' else 'API calls: ')
                   + name, fontsize=9)
    axes.tick_params(labelsize=7)
    axes.grid(True, alpha=0.3)
    if section == 'calls':
        top = max([v for v in values if v is not None] or [0])
        axes.set_ylim(-0.1 * max(top, 1), top * 1.15 + 0.5)


def _order(name):
    return (not name.startswith('warm'), name)


def draw(records, output, window=5, threshold=30.0):
    """Write the trend plot of ``records`` to ``output`` (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    panels = []
    for section in ('ratios', 'calls'):
        names = sorted({n for entry in records
                        for n in entry.get(section, {})}, key=_order)
        panels += [(section, name) for name in names]
    rows = max(1, -(-len(panels) // COLUMNS))
    figure, grid = pyplot.subplots(rows, COLUMNS, squeeze=False,
                                   figsize=(4 * COLUMNS, 2.4 * rows))
    labels = [(entry.get('commit') or '?')[:7] for entry in records]
    step = max(1, len(records) // 8)
    for index, axes in enumerate(grid.flat):
        if index >= len(panels):
            axes.axis('off')
            continue
        _panel(axes, records, panels[index][0], panels[index][1], window,
               threshold)
        ticks = list(range(0, len(records), step))
        axes.set_xticks(ticks)
        axes.set_xticklabels([labels[i] for i in ticks], rotation=30,
                             fontsize=6)
        axes.set_xlim(-0.5, len(records) - 0.5)
    figure.suptitle('sushy-kubevirt benchmark history: %d records; points: '
                    'records; line: rolling median of %d; dashed: the gate '
                    '(%.0f %% below the median of the %d before)'
                    % (len(records), window, threshold, window), fontsize=11)
    figure.tight_layout(rect=(0, 0, 1, 0.97))
    figure.savefig(output, dpi=72, metadata={'Software': None})
    pyplot.close(figure)
    return output
