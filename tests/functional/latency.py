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

"""Plain GET latencies beside a load, compared with quiet ones.

GETs go one after another, each on a connection of its own (so they
reach every gunicorn worker); a GET that fails or takes longer than
:data:`TIMEOUT` counts as unanswered. The quiet GETs run before and after
the loaded ones, in the same run, and the loaded p99 is compared with
the larger quiet one.
"""

import os
import time

import requests

TIMEOUT = 5.0
RATIO = 3
#: GETs of a sample: the p99 is their 4th slowest.
COUNT = 300
#: Seconds the GETs of a sample may take.
BOUND = 60.0


def gets(url, paths, until=None):
    """Seconds of COUNT GETs of ``paths`` in turn, None when unanswered.

    With ``until``, GETs go on past COUNT until ``until()`` is true,
    within :data:`BOUND` seconds.
    """
    samples, deadline = [], time.monotonic() + BOUND
    while (len(samples) < COUNT or (until and not until())) and \
            time.monotonic() < deadline:
        started = time.monotonic()
        try:
            answer = requests.get(url + paths[len(samples) % len(paths)],
                                  timeout=TIMEOUT,
                                  headers={'Connection': 'close'})
            ok = answer.status_code == 200
        except requests.RequestException:
            ok = False
        samples.append(time.monotonic() - started if ok else None)
    return samples


def p99(samples):
    """The 99th percentile of ``samples`` (unanswered ones are infinite)."""
    ordered = sorted(float('inf') if s is None else s for s in samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def assert_kept(loud, *quiet):
    """Every loaded GET answered, their p99 within RATIO of the quiet."""
    calm = max(p99(samples) for samples in quiet)
    unanswered = sum(s is None for s in loud)
    assert not unanswered, '%d of %d GETs unanswered' % (unanswered,
                                                         len(loud))
    assert p99(loud) <= RATIO * calm, 'p99 %.1f ms under load, %.1f ms ' \
        'quiet' % (p99(loud) * 1000, calm * 1000)


def cpu_seconds(pids):
    """User and system CPU seconds the processes ``pids`` have used."""
    total = 0
    for pid in pids:
        with open('/proc/%d/stat' % pid) as stat:
            fields = stat.read().rpartition(')')[2].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf('SC_CLK_TCK')


def children(pid):
    """The processes whose parent is ``pid`` (a gunicorn's workers)."""
    found = []
    for name in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/stat' % name) as stat:
                parent = int(stat.read().rpartition(')')[2].split()[1])
        except OSError:
            continue   # ended meanwhile
        if parent == pid:
            found.append(int(name))
    return found
