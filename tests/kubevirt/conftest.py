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

"""The report of every KubeVirt difference, at the end of the run.

With ``$SUSHY_KUBEVIRT_CORPUS_TRANSCRIPTS`` set, every transcript is also
written there as JSON, keyed ``cluster/case``.
"""

import json
import os

from tests.kubevirt import test_differential


def pytest_terminal_summary(terminalreporter):
    test_differential.REPORT.summary(terminalreporter)


def pytest_sessionfinish(session):
    out = os.environ.get('SUSHY_KUBEVIRT_CORPUS_TRANSCRIPTS')
    if out and test_differential.TRANSCRIPTS:
        with open(out, 'w') as f:
            json.dump({'%s/%s' % key: transcript for key, transcript in
                       test_differential.TRANSCRIPTS.items()}, f, indent=1)
