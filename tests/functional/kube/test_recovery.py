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

"""TooLarge on a watch, the stall detector, reads in a forbidden namespace.

Each test reads the simulator's request log to see what the informers did.
"""

import dataclasses
import logging

import pytest
from tests import backend
from tests.functional.kube.conftest import kube_calls
from tests.functional.kube.conftest import TIMINGS
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources
from sushy_kubevirt.simulator import objects

GROUP, VERSION = 'kubevirt.io', 'v1'
VM_WATCH = dict(path='/virtualmachines$', query={'watch': 'true'})


def vm_entries(sim, verb):
    return sim.request_log.entries(verb=verb, resource='virtualmachines')


def create(custom_api, name, namespace='default'):
    custom_api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, 'virtualmachines',
        objects.make_vm(name, namespace))


@backend.simulator_only('faults')
def test_too_large_in_stream_relists_with_a_consistent_read(
        sim, cluster, custom_api):
    sim.request_log.clear()
    current = sim.store.resource_version
    sim.faults.watch_error(
        504, after=0, message='Timeout: Too large resource version: %d, '
        'current: %d' % (current + 1000, current), **VM_WATCH)
    wait_for(lambda: vm_entries(sim, 'list'))
    create(custom_api, 'during-too-large')
    wait_for(lambda: cluster.get_vm('default', 'during-too-large'))
    lists = vm_entries(sim, 'list')
    assert len(lists) == 1
    # Not at the resourceVersion the server is behind of: the latest.
    assert 'resourceVersion' not in lists[0]['query']
    assert lists[0]['query'].get('limit') == '500'
    wait_for(lambda: [w for w in vm_entries(sim, 'watch')
                      if w['started'] > lists[0]['started']])


@backend.simulator_only('faults')
def test_stalled_watch_is_abandoned_and_resumed_without_relist(
        sim, cluster_factory, custom_api):
    timings = dataclasses.replace(TIMINGS, read_timeout=0.5,
                                  watch_timeout=(2, 2))
    # The first VM watch gets headers, then nothing for 3 s.
    rule = sim.faults.stall(seconds=3, **VM_WATCH)
    cluster = cluster_factory(sim, timings=timings)
    assert cluster.wait_for_sync(10)
    wait_for(lambda: rule.hits == 1)
    stalled = wait_for(lambda: [w for w in vm_entries(sim, 'watch')
                                if w['duration'] >= 2.5], timeout=10)[0]
    assert stalled['events'] == 0
    after = wait_for(lambda: [w for w in vm_entries(sim, 'watch')
                              if w['started'] > stalled['started']])
    gap = after[0]['started'] - stalled['started']
    # Abandoned by the client's read timeout, well before the server's 3 s.
    assert 0.5 * 0.9 <= gap < 2.5
    assert after[0]['query']['resourceVersion'] == \
        stalled['query']['resourceVersion']
    assert len(vm_entries(sim, 'list')) == 1    # the first list only
    create(custom_api, 'after-stall')
    wait_for(lambda: cluster.get_vm('default', 'after-stall'))
    assert len(vm_entries(sim, 'list')) == 1


@backend.simulator_only('authz')
def test_reads_in_a_forbidden_namespace_raise_and_call_nothing(
        sim_factory, cluster_factory, caplog):
    sim = sim_factory(vms=4, namespaces=2)
    sim.authz.deny(namespace='ns-001', resource='virtualmachines')
    cluster = cluster_factory(sim, namespaces=('ns-000', 'ns-001'))
    with caplog.at_level(logging.WARNING, logger='sushy_kubevirt'):
        wait_for(lambda: cluster._informer(
            resources.VM, 'ns-001').refusal())
        wait_for(lambda: cluster._informer(
            resources.VM, 'ns-000').has_synced())
        wait_for(lambda: cluster._informer(
            resources.VMI, 'ns-001').has_synced())
        sim.request_log.clear()
        caplog.clear()
        for _ in range(5):
            for read in (lambda: cluster.get_vm('ns-001', 'vm-00001'),
                         lambda: cluster.find_vms('name', 'vm-00001'),
                         cluster.list_vms):
                with pytest.raises(apierrors.Unreadable) as exc:
                    read()
                assert str(exc.value) == (
                    'the API server refuses to list '
                    'virtualmachines.kubevirt.io in namespace ns-001')
                assert exc.value.cause.status == 403
            # A match in the readable namespace is an answer.
            assert [v['metadata']['name'] for v in
                    cluster.find_vms('name', 'vm-00000')] == ['vm-00000']
        # (The informer of ns-001 keeps retrying its paginated list.)
        assert kube_calls(sim, resource=lambda r: True,
                          query=lambda q: 'limit' not in q) == []
        warnings = [r.getMessage() for r in caplog.records
                    if r.name == 'sushy_kubevirt.kube.lister']
    assert len(warnings) == 1
    assert 'virtualmachines in namespace ns-001' in warnings[0]
    assert 'forbidden' in warnings[0]
    sim.authz.clear()
    wait_for(lambda: readable(cluster, 'ns-001'))
    assert cluster.get_vm('ns-001', 'vm-00001')
    assert len(cluster.list_vms()) == 4


def readable(cluster, namespace):
    try:
        cluster.get_vm(namespace, 'any')
    except apierrors.Unreadable:
        return False
    return True
