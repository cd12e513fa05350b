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
nothing in a run of both servers (it is stale: remove it).
"""

import collections
import fnmatch
import re

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

# (case, location, simulator value, kube value, reason or None), for the
# terminal summary.
REPORT = []
USED = set()


def locate(transcript_a, transcript_b, found):
    """``#step REQUEST path`` for a ``normalize.differences`` path."""
    match = re.match(r'\[(\d+)\]', found)
    step = int(match.group(1)) if match else -1
    request = ''
    for transcript in (transcript_a, transcript_b):
        if 0 <= step < len(transcript):
            request = transcript[step].get('request') or \
                transcript[step].get('fact', '')
            break
    return '#%d %s %s' % (step, request, found[match.end() + 1:]
                          if match else found)


def explain(case, location):
    """The reason a difference is allowed, or None."""
    for i, entry in enumerate(ALLOWED):
        if fnmatch.fnmatch(case, entry.case) and \
                re.search(entry.where, location):
            USED.add(i)
            return entry.reason
    return None


def stale(cases):
    """Entries matching one of ``cases`` that explained nothing."""
    return [entry for i, entry in enumerate(ALLOWED) if i not in USED and
            any(fnmatch.fnmatch(c, entry.case) for c in cases)]
