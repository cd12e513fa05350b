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

"""kube-apiserver's audit policy: every request, once, as it completes.

``POLICY`` records every request at ``Metadata`` level when its response
is complete (watches too); the log backend writes the line before the
response is sent (``--audit-log-mode=blocking``), so a reader finds a
request's line as soon as its client has the answer.
``sushy_kubevirt.simulator.auditlog`` reads the log.
"""

import json

from sushy_kubevirt import files

POLICY = {
    'apiVersion': 'audit.k8s.io/v1', 'kind': 'Policy',
    'omitStages': ['RequestReceived', 'ResponseStarted'],
    'rules': [{'level': 'Metadata'}],
}
FLAGS = ('--audit-log-format=json', '--audit-log-mode=blocking',
         '--audit-log-maxsize=0', '--audit-log-maxbackup=0')


def write_policy(path):
    files.replace(path, json.dumps(POLICY))
    return path
