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

"""A paginated first list whose continue token expires still syncs.

As client-go's pager (``FullListIfExpired``): the pages read so far are
dropped and the list is read once more, whole, without a limit.
"""

import dataclasses
import random
import threading
import time

from tests import backend
from tests.functional.emulator import harness
from tests.functional.kube.conftest import kube_calls
from tests.functional.kube.conftest import TIMINGS

from sushy_kubevirt.kube import resources

PAGE = 50
VM_PAGES = dict(path='/virtualmachines$', query={'continue': None})


def _pages(sim):
    """The VM list calls: (continue sent, limit sent, status)."""
    return [(bool(e['query'].get('continue')), e['query'].get('limit'),
             e['status']) for e in kube_calls(sim, 'list')]


def _churn(sim, vms, per_s, stop):
    """Relabel ``per_s`` random VMs a second until ``stop`` is set."""
    rt = sim.store.resource(resources.VM.group, resources.VM.plural)
    rand = random.Random(7)
    due = time.monotonic()
    while not stop.wait(max(0.0, due - time.monotonic())):
        name = 'vm-%05d' % rand.randrange(vms)
        value = str(rand.randrange(1 << 30))
        sim.store.mutate(rt, 'default', name, lambda o: o['metadata'].
                         setdefault('labels', {}).update(churn=value))
        due += 1.0 / per_s


@backend.simulator_only('faults')
def test_an_expired_continue_token_lists_once_without_pages(
        sim_factory, cluster_factory):
    sim = sim_factory(vms=200)
    sim.request_log.clear()
    # The third page's token has expired (history compacted meanwhile).
    sim.faults.status(410, message='The provided continue parameter is '
                      'too old to display a consistent list result.',
                      times=1, **VM_PAGES)
    timings = dataclasses.replace(TIMINGS, page_size=PAGE)
    cluster = cluster_factory(sim, timings=timings)
    assert cluster.wait_for_sync(10)
    page = str(PAGE)
    assert _pages(sim) == [(False, page, 200), (True, page, 410),
                           (False, None, 200)]
    assert len(cluster.list_vms()) == 200


def test_sync_converges_while_one_percent_changes_a_second(
        sim_factory, cluster_factory):
    vms = 2000
    # 1 % a second is 20 writes a second: a history of 10 events is
    # compacted within half a second, while the 40 pages take 2 s.
    sim = sim_factory(vms=vms, history_size=10)
    sim.faults.latency(0.05, **VM_PAGES)
    sim.request_log.clear()
    stop = threading.Event()
    writer = threading.Thread(target=_churn, args=(sim, vms, vms // 100,
                                                   stop))
    writer.start()
    try:
        timings = dataclasses.replace(TIMINGS, page_size=PAGE)
        started = time.monotonic()
        cluster = cluster_factory(sim, timings=timings)
        assert cluster.wait_for_sync(20)
        assert time.monotonic() - started < 20
    finally:
        stop.set()
        writer.join(5)
    calls = _pages(sim)
    # Pages until the token expired, one 410, one whole list; then at
    # most one relist (the watch may find that list's RV compacted).
    expired = calls.index((True, str(PAGE), 410))
    assert 0 < expired < vms // PAGE
    assert calls[expired + 1] == (False, None, 200)
    assert len(calls) - expired - 2 <= 1
    assert all(c[2] == 200 for c in calls[expired + 1:])
    # The cache converges on the server's state once the writes stop.
    rt = sim.store.resource(resources.VM.group, resources.VM.plural)

    def current():
        server = {o['metadata']['name']: o['metadata']['resourceVersion']
                  for o in sim.store.list(rt, 'default')[0]}
        cached = {o['metadata']['name']: o['metadata']['resourceVersion']
                  for o in cluster.list_vms()}
        return server == cached
    harness.wait_until(current, 10, 0.05, 'the cache caught up')
