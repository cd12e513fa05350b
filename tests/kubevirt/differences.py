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

"""Known differences between the simulated and the real KubeVirt and CDI.

Each entry names a case (``fnmatch`` pattern), a regular expression
searched in the difference's location (``#step action-or-observed
path``) and the reason; doc/source/simulator.rst ("Differences from
KubeVirt and CDI") says the same to users. A difference no entry
explains fails the comparison, and so does an entry that explains
nothing in a run of both clusters.
"""

import collections
import fnmatch
import re

Allowed = collections.namedtuple('Allowed', 'case where reason')

ALLOWED = []

# (case, location, simulator value, kubevirt value, reason or None)
REPORT = []
USED = set()


def locate(left, right, found):
    """``#step what path`` for a ``normalize.differences`` path."""
    match = re.match(r'\[(\d+)\]', found)
    step = int(match.group(1)) if match else -1
    what = ''
    for transcript in (left, right):
        if 0 <= step < len(transcript):
            what = transcript[step].get('action', 'observed')
            break
    return '#%d %s %s' % (step, what,
                          found[match.end() + 1:] if match else found)


def explain(case, location):
    for i, entry in enumerate(ALLOWED):
        if fnmatch.fnmatch(case, entry.case) and \
                re.search(entry.where, location):
            USED.add(i)
            return entry.reason
    return None


def stale(cases):
    return [entry for i, entry in enumerate(ALLOWED) if i not in USED and
            any(fnmatch.fnmatch(c, entry.case) for c in cases)]
