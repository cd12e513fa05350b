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

"""VMI handlers: replay for late handlers, one shared dispatcher thread."""

import logging
import threading

from tests.functional.kube.conftest import our_threads
from tests.functional.kube.conftest import wait_for


def start(cluster, *names):
    """Start VMs ``names`` and wait until ``cluster``'s cache has the VMIs.

    The cluster syncs first: before that ``get_vmi`` reads live, and can
    see a VMI that the informer's first list came too early for.
    """
    assert cluster.wait_for_sync(10)
    for name in names:
        cluster.vm_subresource('default', name, 'start')
    wait_for(lambda: all(cluster.get_vmi('default', n) for n in names))


def test_handler_added_after_sync_gets_existing_vmis_first(sim, cluster):
    start(cluster, 'vm-00001', 'vm-00002')
    events = []
    cluster.add_vmi_handler(lambda kind, vmi: events.append(
        (kind, vmi['metadata']['name'], threading.current_thread().name)))
    wait_for(lambda: len(events) >= 2)
    assert sorted(events[:2]) == [
        ('ADDED', 'vm-00001', 'dispatcher kube'),
        ('ADDED', 'vm-00002', 'dispatcher kube')]
    cluster.vm_subresource('default', 'vm-00001', 'stop')
    wait_for(lambda: ('DELETED', 'vm-00001', 'dispatcher kube') in events)
    # The replay came first; later events follow it, in watch order.
    replayed = events.index(('DELETED', 'vm-00001', 'dispatcher kube'))
    assert replayed >= 2
    assert all(kind != 'ADDED' or name != 'vm-00001'
               for kind, name, _ in events[2:])


def _fresh_cluster_with_handler(sim, cluster_factory, running):
    """A Cluster, not started, whose VMI handler records ``events``.

    Another Cluster first starts VM ``running``.
    """
    start(cluster_factory(sim), running)
    cluster = cluster_factory(sim)
    events = []
    cluster.add_vmi_handler(lambda kind, vmi: events.append(
        (kind, vmi['metadata']['name'])))
    return cluster, events


def test_handler_added_before_start_gets_the_first_list_once(
        sim, cluster_factory):
    cluster, events = _fresh_cluster_with_handler(sim, cluster_factory,
                                                  'vm-00003')
    assert cluster.wait_for_sync(10)
    wait_for(lambda: events)
    # The VMI may still move through its phases: MODIFIED may follow, but
    # the listed object is handed over once, first.
    assert events[0] == ('ADDED', 'vm-00003')
    assert [e for e in events if e[0] == 'ADDED'] == [('ADDED', 'vm-00003')]


class _SlowStart(logging.Handler):
    """Holds up the thread starting a Cluster once its watches started."""

    def emit(self, record):
        if record.getMessage().startswith('Watching '):
            threading.Event().wait(1.0)


def test_first_list_reaches_a_handler_while_the_start_is_slow(
        sim, cluster_factory):
    """The first list's ADDED events are not dropped as a stopped one's.

    The informers may list and dispatch before the starting thread has
    finished: a loaded machine, here a slow log handler.
    """
    cluster, events = _fresh_cluster_with_handler(sim, cluster_factory,
                                                  'vm-00002')
    slow = _SlowStart()
    logger = logging.getLogger('sushy_kubevirt.kube.cluster')
    logger.addHandler(slow)
    try:
        cluster.start()
    finally:
        logger.removeHandler(slow)
    assert cluster.wait_for_sync(10)
    wait_for(lambda: ('ADDED', 'vm-00002') in events)


def test_one_dispatcher_thread_per_cluster(sim_factory, cluster_factory):
    sim = sim_factory(vms=6, namespaces=3)
    cluster = cluster_factory(sim, datavolumes=True,
                              namespaces=('ns-000', 'ns-001', 'ns-002'))
    assert cluster.wait_for_sync(10)
    names = sorted(t.name for t in our_threads())
    assert names.count('dispatcher kube') == 1
    assert len([n for n in names if n.startswith('reflector ')]) == 9
    assert len(names) == 10


def test_add_handler_replays_every_kind_then_marks_the_sync(
        sim, cluster_factory):
    cluster = cluster_factory(sim, datavolumes=True)
    start(cluster, 'vm-00001')
    events = []
    assert cluster.add_handler(lambda kind, plural, obj: events.append(
        (kind, plural, obj and obj['metadata']['name'])), timeout=10)
    marker = ('SYNCED', None, None)
    wait_for(lambda: marker in events)
    replay = events[:events.index(marker)]
    assert {kind for kind, _, _ in replay} == {'ADDED'}
    assert ('ADDED', 'virtualmachines', 'vm-00002') in replay
    assert ('ADDED', 'virtualmachineinstances', 'vm-00001') in replay
    cluster.vm_subresource('default', 'vm-00001', 'stop')
    wait_for(lambda: ('DELETED', 'virtualmachineinstances', 'vm-00001')
             in events)
    assert events.index(('DELETED', 'virtualmachineinstances',
                         'vm-00001')) > events.index(marker)
