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

"""The bench cluster's call counts leave out the orphan collector's."""

import time
import types

from sushy_kubevirt.bench import cluster
from sushy_kubevirt.simulator import requestlog

TRAYS = 'app.kubernetes.io/managed-by=sushy-kubevirt,' \
    'sushy-kubevirt.io/vmedia-device'


def _entry(verb, resource, **query):
    return {'verb': verb, 'resource': resource, 'query': query,
            'started': time.time()}


def test_the_tray_secrets_sweep_is_no_requests_cost():
    sim = types.SimpleNamespace(request_log=requestlog.RequestLog())
    seen, since = sim.request_log.counters(), time.time() - 1
    for entry in (_entry('get', 'virtualmachines'),
                  _entry('list', 'secrets', labelSelector=TRAYS),
                  _entry('list', 'secrets', labelSelector='session=true')):
        sim.request_log.record(entry)
    counts, seen, since = cluster._counts(sim, seen, since)
    assert counts == {'get virtualmachines': 1, 'list secrets': 1}
    sim.request_log.record(_entry('list', 'secrets', labelSelector=TRAYS))
    assert cluster._counts(sim, seen, since)[0] == {}
