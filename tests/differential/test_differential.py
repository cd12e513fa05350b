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

"""The corpus against the simulator and a real kube-apiserver.

``test_case`` runs one case on one server and keeps its normalised
transcript (every simulator case first, then every kube case: the
compaction case restarts kube-apiserver, so it is last);
``test_compare`` compares the two transcripts of a case; every
difference is printed at the end of the run, with its reason when it is
a known one (``differences``).
"""

import pytest
from tests.differential import corpus
from tests.differential import corpus_lifecycle  # noqa: F401 (cases)
from tests.differential import corpus_reads  # noqa: F401 (cases)
from tests.differential import corpus_writes  # noqa: F401 (cases)
from tests.differential import differences
from tests.differential import recorder

pytestmark = pytest.mark.timeout(300)

BACKENDS = ('simulator', 'kube')
LAST = ('compaction',)
CASES = sorted(corpus.CASES, key=lambda name: (name in LAST, name))
TRANSCRIPTS = {}


def _namespace(backend, case):
    name = 'diff-' + case.replace('_', '-')
    answer = backend.request('POST', '/api/v1/namespaces', json={
        'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}})
    assert answer.status_code == 201, answer.text
    return name


@pytest.mark.parametrize('backend,case', [(b, c) for b in BACKENDS
                                          for c in CASES],
                         indirect=['backend'])
def test_case(backend, case):
    session = recorder.Session(backend, _namespace(backend, case))
    corpus.CASES[case](session)
    TRANSCRIPTS[backend.name, case] = session.transcript


@pytest.mark.parametrize('case', CASES)
def test_compare(case):
    sim = TRANSCRIPTS.get(('simulator', case))
    kube = TRANSCRIPTS.get(('kube', case))
    if sim is None or kube is None:
        pytest.skip('the case did not run on both servers')
    unexplained = differences.REPORT.compare(case, sim, kube)
    assert not unexplained, '\n'.join(unexplained)


def test_allow_list_is_current():
    ran = [c for c in CASES if ('simulator', c) in TRANSCRIPTS and
           ('kube', c) in TRANSCRIPTS]
    if not ran:
        pytest.skip('no case ran on both servers')
    assert not differences.REPORT.stale(ran)
