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

"""Sampling profile of the emulator's hot path with py-spy.

py-spy wraps the emulator process (``py-spy record --format raw``) and is
stopped with SIGINT so it writes its collapsed stacks; :func:`summarize`
turns them into the functions and packages that dominate.
"""

import collections
import os
import re
import shutil
import sys

_LINE = re.compile(r':\d+\)$')
_REQUEST = '.wsgi_app ('
_FOCUS = ('sushy_kubevirt/', 'sushy_tools/', 'kubernetes/')


def pyspy():
    """Path of the py-spy binary, or None if it is not installed."""
    here = os.path.join(os.path.dirname(sys.executable), 'py-spy')
    return here if os.path.exists(here) else shutil.which('py-spy')


def wrapper(output):
    return (pyspy(), 'record', '--format', 'raw', '--rate', '250',
            '--subprocesses', '--output', output, '--')


def _frames(stack):
    frames = stack.split(';')
    if frames and frames[0].startswith('process '):
        frames = frames[1:]
    return [_LINE.sub(')', frame) for frame in frames]


def _package(frame):
    match = re.search(r'\(([^)]*)\)$', frame)
    path = match.group(1) if match else frame
    parts = path.split('/')
    if parts[0] in ('sushy_kubevirt', 'sushy_tools') and len(parts) > 1:
        return '/'.join(parts[:2])
    return parts[0] if len(parts) > 1 else 'stdlib:' + parts[0]


def summarize(raw_path, top=15):
    """Where request handling (stacks through ``wsgi_app``) spends time.

    Percentages are of the request-handling samples: by package and by
    function of the innermost frame (``self``), and by function of this
    project, sushy-tools or the kubernetes client anywhere on the stack
    (``inclusive``). Other busy threads (the informers', the server's
    accept loop) only count in ``samples``.
    """
    own, inclusive, packages = (collections.Counter() for _ in range(3))
    total = requests = 0
    with open(raw_path) as raw:
        for line in raw:
            stack, _, count = line.rstrip('\n').rpartition(' ')
            if not stack:
                continue
            count, frames = int(count), _frames(stack)
            if not frames:
                continue
            total += count
            if not any(_REQUEST in frame for frame in frames):
                continue
            requests += count
            packages[_package(frames[-1])] += count
            own[frames[-1]] += count
            for frame in set(frames):
                if any(focus in frame for focus in _FOCUS):
                    inclusive[frame] += count

    def pct(counter):
        return [[name, round(100.0 * n / max(requests, 1), 1)]
                for name, n in counter.most_common(top)]
    return {'samples': total, 'request_samples': requests,
            'self': pct(own), 'inclusive': pct(inclusive),
            'self_by_package': pct(packages)}


def text(summary, limit=10):
    lines = ['%d busy samples, %d handling requests'
             % (summary['samples'], summary['request_samples'])]
    for title in ('self_by_package', 'inclusive', 'self'):
        lines.append('%s:' % title)
        lines += ['  %5.1f%%  %s' % (p, name)
                  for name, p in summary[title][:limit]]
    return '\n'.join(lines)
