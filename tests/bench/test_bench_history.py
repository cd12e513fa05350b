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

"""``python -m sushy_kubevirt.bench history``: the gate's exit status.

Records are written by hand (the quick run itself is exercised in
test_bench_smoke); the command runs as CI runs it, in its own process.
"""

import json
import subprocess
import sys

import pytest

from sushy_kubevirt.bench import history


def _record(commit, ratios, calls, errors=0):
    return {'commit': commit * 40, 'dirty': False,
            'date': '2026-12-01T00:00:00Z',
            'machine': {'nproc': 2, 'cpu': 'test', 'python': '3.11'},
            'figures': {'get warm p50 ms': 1.0}, 'ratios': ratios,
            'calls': calls, 'errors': errors}


RATIOS = {'warm/fake get per CPU s': 2.8, 'warm/fake poll per CPU s': 2.7}
CALLS = {'warm get_system': 0.0, 'warm reset': 1.5, 'live get_system': 5.0}


def _history(tmp_path, records, *options):
    path = tmp_path / 'history.jsonl'
    path.write_text(''.join(json.dumps(r) + '\n' for r in records))
    return subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench', 'history', str(path)]
        + list(options), capture_output=True, text=True, timeout=60,
        check=False)


def _base():
    return [_record(c, dict(RATIOS), dict(CALLS)) for c in 'abc']


def test_unchanged_exits_0(tmp_path):
    done = _history(tmp_path, _base() + [_record('d', RATIOS, CALLS)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'no regression' in done.stdout
    assert 'warm/fake get per CPU s' in done.stdout


def test_halved_ratios_exit_3(tmp_path):
    halved = {name: value / 2 for name, value in RATIOS.items()}
    done = _history(tmp_path, _base() + [_record('d', halved, CALLS)])
    assert done.returncode == 3, done.stdout + done.stderr
    for name in RATIOS:
        assert 'ratio %r' % name in done.stdout


def test_ratio_within_threshold_exits_0(tmp_path):
    lower = {name: value * 0.8 for name, value in RATIOS.items()}
    assert _history(tmp_path, _base() + [_record('d', lower, CALLS)]
                    ).returncode == 0
    assert _history(tmp_path, _base() + [_record('d', lower, CALLS)],
                    '--threshold', '10').returncode == 3


def test_baseline_is_the_median_of_the_window(tmp_path):
    # A noisy last record (4.0) does not raise the baseline: the median
    # of the previous three is 2.8, and 2.0 is 29 % below it; with a
    # window of one record the baseline is 4.0.
    records = _base()
    records[-1]['ratios']['warm/fake get per CPU s'] = 4.0
    lower = dict(RATIOS, **{'warm/fake get per CPU s': 2.0})
    assert _history(tmp_path, records + [_record('d', lower, CALLS)]
                    ).returncode == 0
    assert _history(tmp_path, records + [_record('d', lower, CALLS)],
                    '--window', '1').returncode == 3


@pytest.mark.parametrize('name', sorted(CALLS))
def test_more_api_calls_exit_3(tmp_path, name):
    more = dict(CALLS, **{name: CALLS[name] + 0.5})
    done = _history(tmp_path, _base() + [_record('d', RATIOS, more)])
    assert done.returncode == 3, done.stdout + done.stderr
    assert 'API calls %r' % name in done.stdout


def test_fewer_api_calls_and_new_kinds_pass(tmp_path):
    fewer = dict(CALLS, **{'warm reset': 1.0, 'warm new_kind': 3.0})
    assert _history(tmp_path, _base() + [_record('d', RATIOS, fewer)]
                    ).returncode == 0


def test_missing_figure_or_failed_requests_exit_3(tmp_path):
    missing = {'warm/fake get per CPU s': 2.8}
    done = _history(tmp_path, _base() + [_record('d', missing, CALLS)])
    assert done.returncode == 3 and 'not measured' in done.stdout
    done = _history(tmp_path,
                    _base() + [_record('d', RATIOS, CALLS, errors=2)])
    assert done.returncode == 3 and '2 requests failed' in done.stdout


def test_an_accepted_record_passes_and_gates_what_follows(tmp_path):
    more = dict(CALLS, **{'warm reset': 2.0})
    accepted = _record('d', RATIOS, more)
    accepted['accepted'] = 'ForceOff confirms live'
    done = _history(tmp_path, _base() + [accepted])
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'accepted in the newest record (ddddddd): ForceOff confirms' \
        in done.stdout
    # Failed requests are never accepted.
    failed = dict(accepted, errors=1)
    assert _history(tmp_path, _base() + [failed]).returncode == 3
    # The next record is gated against the accepted one's counts.
    after = _base() + [accepted]
    assert _history(tmp_path, after + [_record('e', RATIOS, more)]
                    ).returncode == 0
    assert _history(tmp_path, after + [_record('e', RATIOS, dict(
        more, **{'warm reset': 2.5}))]).returncode == 3


FLOORED = 'warm/fake capacity per CPU s'


def test_a_ratio_below_its_floor_exits_3_even_accepted(tmp_path):
    # The floor holds with no baseline, with a steady baseline and on an
    # accepted record; above it the relative gate still applies.
    assert history.FLOORS[FLOORED] == 2.0
    over, under = dict(RATIOS, **{FLOORED: 2.4}), dict(RATIOS,
                                                       **{FLOORED: 1.9})
    done = _history(tmp_path, [_record('d', under, CALLS)])
    assert done.returncode == 3, done.stdout + done.stderr
    assert 'ratio %r: 1.9 is below its floor 2' % FLOORED in done.stdout
    assert 'BELOW FLOOR 2' in done.stdout
    steady = [_record(c, dict(under), dict(CALLS)) for c in 'abc']
    accepted = dict(_record('d', under, CALLS), accepted='noisy')
    for records in (steady + [_record('d', under, CALLS)],
                    _base() + [accepted]):
        assert _history(tmp_path, records).returncode == 3
    assert _history(tmp_path, [_record('d', over, CALLS)]).returncode == 0
    high = [_record(c, dict(RATIOS, **{FLOORED: 4.0}), dict(CALLS))
            for c in 'abc']
    assert _history(tmp_path, high + [_record('d', over, CALLS)]
                    ).returncode == 3


def test_plot(tmp_path):
    pytest.importorskip('matplotlib')
    out = tmp_path / 'trend.png'
    done = _history(tmp_path, _base(), '--plot', str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
