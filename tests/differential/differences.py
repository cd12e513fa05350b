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

"""Known differences between the simulator and kube-apiserver, and the
report of every difference a run found.

Each entry of ``ALLOWED`` names a case (``fnmatch`` pattern), a regular
expression searched in the difference's location (``#step REQUEST
json.path``) and the reason; doc/source/simulator.rst ("Differences from
kube-apiserver") says the same to users. A difference that no entry
explains fails the comparison, and so does an entry that explains
nothing in a run of both servers (it is stale: remove it). ``Report``
serves the KubeVirt corpus (``tests/kubevirt``) too.
"""

import collections
import fnmatch
import re

from tests.differential import normalize

Allowed = collections.namedtuple('Allowed', 'case where reason')

GO_DECODER = ('the text of a Go decoder error (encoding/json, the YAML '
              'to JSON converter, the continue-token decoder) is not '
              'reproduced; the status code and reason are')
ALLOWED = [
    Allowed('create_errors', r'#8 POST .* body\.message$', GO_DECODER),
    Allowed('merge_patch', r'#7 PATCH .* body\.message$', GO_DECODER),
    Allowed('server_side_apply', r'#11 PATCH .* body\.message$', GO_DECODER),
    Allowed('list_pagination', r'#7 GET .* body\.message$', GO_DECODER),
    Allowed('create_errors', r'#5 POST .* warnings$',
            'kube-apiserver warns of an unknown field "spec" while refusing '
            'a body whose apiVersion is not the URL\'s (it decodes the body '
            'as that unserved version first); the simulator only refuses'),
    Allowed('leases', r'#3 POST ',
            'built-in types are not decoded into typed structs: a value of '
            'the wrong JSON type in a Lease (or Secret, ConfigMap...) is '
            'stored, where kube-apiserver answers 400 "json: cannot '
            'unmarshal string into Go struct field ..."'),
]


def locate(transcript_a, transcript_b, found):
    """``#step what path`` for a ``normalize.differences`` path.

    ``what`` is the step's request, fact or action ('observed' for an
    observation).
    """
    match = re.match(r'\[(\d+)\]', found)
    step = int(match.group(1)) if match else -1
    what = ''
    for transcript in (transcript_a, transcript_b):
        if 0 <= step < len(transcript):
            entry = transcript[step]
            what = entry.get('request') or entry.get('fact') or \
                entry.get('action', 'observed')
            break
    return '#%d %s %s' % (step, what, found[match.end() + 1:]
                          if match else found)


class Report:
    """Every difference of a run, each allowed by an entry or not."""

    def __init__(self, allowed, names):
        #: the ``Allowed`` entries
        self.allowed = allowed
        #: the two clusters compared, as the report names them
        self.names = names
        #: (case, location, first value, second value, reason or None)
        self.rows = []
        self._used = set()

    def compare(self, case, first, second):
        """Record the differences of two transcripts; the unexplained."""
        unexplained = []
        for path, a, b in normalize.differences(first, second):
            where = locate(first, second, path)
            reason = self._explain(case, where)
            self.rows.append((case, where, a, b, reason))
            if reason is None:
                unexplained.append('%s: %s %r, %s %r' % (
                    where, self.names[0], a, self.names[1], b))
        return unexplained

    def _explain(self, case, location):
        for i, entry in enumerate(self.allowed):
            if fnmatch.fnmatch(case, entry.case) and \
                    re.search(entry.where, location):
                self._used.add(i)
                return entry.reason
        return None

    def stale(self, cases):
        """Entries matching one of ``cases`` that explained nothing."""
        return [entry for i, entry in enumerate(self.allowed)
                if i not in self._used and
                any(fnmatch.fnmatch(c, entry.case) for c in cases)]

    def summary(self, terminalreporter):
        """Write every difference at the end of the pytest run."""
        if not self.rows:
            return
        write = terminalreporter.write_line
        terminalreporter.section('differences: %s vs %s' % self.names)
        width = max(len(n) for n in self.names) + 1
        for case, where, a, b, reason in self.rows:
            write('%s %s' % (case, where))
            for name, value in zip(self.names, (a, b)):
                write('    %s %r' % ((name + ':').ljust(width), value))
            write('    %s' % ('allowed: ' + reason if reason
                              else 'UNEXPLAINED'))


REPORT = Report(ALLOWED, ('simulator', 'kube'))
