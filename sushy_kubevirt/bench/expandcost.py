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

"""What a refused ``$expand`` costs, beside a warm System GET.

On a cluster of :data:`VMS` VMs, ``GET /redfish/v1/Systems?$expand=
.($levels=2)`` would fetch each System and its links: far more than the
1,000 resources an expansion may, so it is a 400. One warm emulator is
loaded in turns (``pairs`` of each) with System GETs and with that
``$expand``, each load :data:`REQUESTS` requests from :data:`PARALLEL`
threads. The figures are each side's CPU seconds per request of the
emulator process, the least of its runs (load only adds to them), and
their ratio ``get/refused`` (at least 0.5: a refusal costs at most two
GETs, :data:`.history.FLOORS`). An answer other than the 400 to the
``$expand``, or other than 200 to a GET, is an error.
"""

import dataclasses

from sushy_kubevirt.bench import cluster as cluster_mod
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import measure
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import stats

#: Past the bound at 2 levels: each System has 9 links outside Links.
VMS = 120
REQUESTS = 600
PARALLEL = 4
_WORKLOADS = {'get': 'pr32', 'refused': 'refused_expand'}
_EXPECTED = {'get': '200', 'refused': '400'}


def _loaded(emu, ids, workload, seconds):
    result = measure.loaded(emu, {
        'port': emu.port, 'systems': ids, 'workload': workload,
        'requests': REQUESTS, 'parallel': PARALLEL, 'seconds': seconds})
    return result, result['cpu_ms']


def run(plan, server, pairs, time_scale=1.0):
    """The figures; ``plan`` gives the work directory and time bounds."""
    sized = dataclasses.replace(plan, vms=VMS, namespaces=1,
                                calls_requests=0, lag_samples=0)
    cluster = cluster_mod.Cluster(plan.workdir, VMS, 1,
                                  time_scale=time_scale)
    found = {'vms': VMS, 'server': server, 'pairs': pairs,
             'cpu_ms': {side: [] for side in _WORKLOADS}, 'errors': 0,
             'failures': []}
    try:
        emu, _, ids = measure.start(sized, server, 'warm', cluster)
        try:
            # The first refusal samples a System; the next are decided
            # before the collection renders.
            procs.http_get(emu.port, load.REFUSED_EXPAND)
            for index in range(pairs):
                order = list(_WORKLOADS)[::1 if index % 2 == 0 else -1]
                for side in order:
                    result, cpu_ms = _loaded(emu, ids, _WORKLOADS[side],
                                             plan.seconds)
                    found['cpu_ms'][side].append(cpu_ms)
                    wrong = sum(
                        n for kind in result['kinds'].values()
                        for code, n in kind['statuses'].items()
                        if code != _EXPECTED[side])
                    found['errors'] += wrong
                    if wrong:
                        found['failures'] += result['failures'][:2]
        finally:
            emu.stop()
    finally:
        cluster.stop()
    least = {side: min((v for v in values if v), default=None)
             for side, values in found['cpu_ms'].items()}
    found['least_cpu_ms'] = least
    found['ratio'] = stats.ratio(least['get'], least['refused'])
    return found
