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

"""The capacity bench's plots: one run's curve, and the trend of records."""


def draw(document, output):
    """p99 against requests/s of every step, one panel per load."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    figure, grid = pyplot.subplots(1, 2, figsize=(12, 4.5))
    counts = sorted({run['workers'] for run in document['runs']})
    for axes, mode in zip(grid, ('closed', 'open')):
        for run in document['runs']:
            steps = run['steps'][mode]
            axes.plot([s['rps'] for s in steps], [s['p99_ms'] for s in steps],
                      '-o' if run['driver'] == 'kubevirt' else '--s',
                      color='C%d' % counts.index(run['workers']),
                      markersize=4, label='%s, %d worker(s)' % (
                          run['driver'], run['workers']))
        axes.axhline(document['options']['p99_ms'], color='tab:red',
                     linewidth=1)
        axes.set_yscale('log')
        axes.set_xlabel('requests/s answered')
        axes.set_ylabel('p99 ms')
        axes.set_title('%s loop' % mode, fontsize=10)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=7)
    figure.suptitle('Capacity, %d VMs: Ironic\'s mix under gunicorn%s'
                    % (document['options']['vms'],
                       ', the emulator on a CPU of its own'
                       if document['emulator_cpus'] else ''), fontsize=11)
    figure.tight_layout()
    figure.savefig(output, dpi=72, metadata={'Software': None})
    pyplot.close(figure)


#: The ratios the trend draws: (figure name, style, label).
TREND = (('kubevirt/fake %dw %s req/s', '-o', 'req/s at the p99 bound, '
          'kubevirt/fake'),
         ('fake/kubevirt %dw %s CPU', '--s', 'CPU per request, '
          'fake/kubevirt'))
#: The issue's target for both ratios.
TARGET = 2.0


def draw_trend(records, output):
    """The ratios of ``records`` (one kind, oldest first) over time."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    from sushy_kubevirt.bench import plot

    figure, grid = pyplot.subplots(1, 2, figsize=(12, 4), sharey=True)
    counts = sorted({int(name.split()[1][:-1]) for entry in records
                     for name in entry['figures']
                     if name.startswith('kubevirt/fake ')})
    xs = list(range(len(records)))
    for axes, mode in zip(grid, ('closed', 'open')):
        for index, workers in enumerate(counts):
            for name, style, label in TREND:
                values = [entry['figures'].get(name % (workers, mode))
                          for entry in records]
                axes.plot([x for x, v in zip(xs, values) if v is not None],
                          [v for v in values if v is not None], style,
                          color='C%d' % index, markersize=5,
                          label='%s, %d worker(s)' % (label, workers))
        axes.axhline(TARGET, color='tab:red', linewidth=1)
        axes.set_ylim(bottom=0)
        axes.set_title('%s loop' % mode, fontsize=10)
        axes.set_xticks(plot.ticks(len(records)))
        axes.set_xticklabels([plot.labels(records)[i]
                              for i in plot.ticks(len(records))],
                             fontsize=8)
        axes.set_xlim(-0.5, len(records) - 0.5)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=7)
    grid[0].set_ylabel('ratio (higher is better; red: the target)')
    figure.suptitle('Capacity over time (%s records): this driver against '
                    'the fake driver' % records[-1].get('kind'), fontsize=11)
    figure.tight_layout()
    figure.savefig(output, dpi=72, metadata={'Software': None})
    pyplot.close(figure)
