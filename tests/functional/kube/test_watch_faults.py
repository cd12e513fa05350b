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

"""Watch recovery: 410, compaction with bookmarks, drops, restarts, 403."""

import logging
import math
import time

import pytest
from tests import backend
from tests.functional.kube.conftest import TIMINGS
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.simulator import objects

GROUP, VERSION = 'kubevirt.io', 'v1'
VM_WATCH = dict(path='/virtualmachines$', query={'watch': 'true'})


def vm_entries(sim, verb):
    return sim.request_log.entries(verb=verb, resource='virtualmachines')


def names(vms):
    return sorted(v['metadata']['name'] for v in vms)


def server_names(sim, namespace='default'):
    rt = sim.store.resource(GROUP, 'virtualmachines')
    return names(sim.store.list(rt, namespace)[0])


def create(custom_api, name, namespace='default'):
    custom_api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, 'virtualmachines',
        objects.make_vm(name, namespace))


@backend.simulator_only('faults')
def test_gone_mid_watch_relists_once(sim, cluster, custom_api):
    sim.request_log.clear()
    sim.faults.watch_error(410, after=0, **VM_WATCH)
    create(custom_api, 'before-relist')
    wait_for(lambda: vm_entries(sim, 'list'))
    create(custom_api, 'after-relist')
    custom_api.delete_namespaced_custom_object(
        GROUP, VERSION, 'default', 'virtualmachines', 'vm-00000')
    wait_for(lambda: names(cluster.list_vms()) == server_names(sim))
    assert 'before-relist' in server_names(sim)
    assert 'vm-00000' not in server_names(sim)
    lists = vm_entries(sim, 'list')
    assert len(lists) == 1
    # Relisted at the last known resourceVersion, not from scratch.
    assert lists[0]['query'].get('resourceVersion')
    assert len(cluster.list_vms()) == len(server_names(sim))


def test_compaction_with_bookmarks_resumes_without_relist(sim, cluster,
                                                          custom_api):
    configmaps = sim.store.resource('', 'configmaps')
    for i in range(5):
        sim.store.create(configmaps, {'metadata': {
            'name': 'cm-%d' % i, 'namespace': 'default'}})
    target = str(sim.store.resource_version)
    # A consistent list catches the VMs' watch cache up with the newest RV
    # of any resource (as kube-apiserver's), and a bookmark then moves the
    # VM watch there...
    custom_api.list_namespaced_custom_object('kubevirt.io', 'v1', 'default',
                                             'virtualmachines')
    sim.request_log.clear()
    wait_for(lambda: any(e['query'].get('resourceVersion') == target
                         for e in vm_entries(sim, 'watch')))
    # ... so compacting everything older does not force a relist.
    sim.store.compact()
    compacted = sim.store.compacted_resource_version
    seen = len(vm_entries(sim, 'watch'))
    wait_for(lambda: len(vm_entries(sim, 'watch')) >= seen + 2)
    create(custom_api, 'after-compaction')
    wait_for(lambda: cluster.get_vm('default', 'after-compaction'))
    assert vm_entries(sim, 'list') == []
    assert all(int(e['query']['resourceVersion']) >= compacted
               for e in vm_entries(sim, 'watch')[seen:])


@backend.simulator_only('faults')
def test_dropped_connections_back_off_without_relist(sim, cluster,
                                                     custom_api):
    sim.request_log.clear()
    sim.faults.drop(after=0, times=3, **VM_WATCH)
    wait_for(lambda: len(vm_entries(sim, 'watch')) >= 5)
    create(custom_api, 'after-drops')
    wait_for(lambda: cluster.get_vm('default', 'after-drops'))
    assert vm_entries(sim, 'list') == []
    watches = vm_entries(sim, 'watch')
    dropped = [e for e in watches if e['events'] == 0
               and e['duration'] < 0.5]
    assert len(dropped) >= 3
    # Each retry after a drop waited at least the initial backoff.
    for prev, nxt in zip(watches, watches[1:]):
        if prev in dropped:
            assert nxt['started'] - (prev['started'] + prev['duration']) \
                >= 0.05 * 0.9
    resumed = {e['query']['resourceVersion'] for e in watches[:4]}
    assert len(resumed) == 1


def test_server_restart_recovers_without_storm(sim, cluster, custom_api):
    sim.request_log.clear()
    before = cluster.accounting.live_calls('watch')
    started = time.monotonic()
    assert sim.restart_api(down_seconds=0.6).wait(30)
    create(custom_api, 'after-restart')
    wait_for(lambda: cluster.get_vm('default', 'after-restart'))
    elapsed = time.monotonic() - started
    if not backend.REAL:
        # (A restarted kube-apiserver rebuilds its watch cache and answers
        # a resumed watch with an error: the reflector lists again.)
        assert vm_entries(sim, 'list') == []
        assert sim.request_log.entries(verb='list') == []
    # Two informers retry with backoff (0.05 s doubling, 0.2 s cap): at
    # most one attempt per cap while the server is away, plus the ramp.
    # (A real kube-apiserver is away for its whole start, 1-5 s; a retry
    # loop without backoff would make hundreds of attempts a second.)
    bound = 2 * (3 + math.ceil(elapsed / TIMINGS.backoff_cap))
    assert cluster.accounting.live_calls('watch') - before <= bound


@backend.simulator_only('authz')
def test_forbidden_namespace_leaves_others_serving(sim_factory,
                                                   cluster_factory, caplog):
    sim = sim_factory(vms=4, namespaces=2)
    sim.authz.deny(namespace='ns-001', resource='virtualmachines')
    cluster = cluster_factory(sim, namespaces=('ns-000', 'ns-001'))
    with caplog.at_level(logging.ERROR, logger='sushy_kubevirt'):
        wait_for(lambda: cluster.find_vms('name', 'vm-00000'))
        wait_for(lambda: any('ns-001' in r.getMessage() and 'forbidden'
                             in r.getMessage().lower()
                             for r in caplog.records))

    def cached():
        # Served by ns-000's synced informer, not live.
        reads = cluster.accounting.cache_reads('get', 'virtualmachines')
        return cluster.get_vm('ns-000', 'vm-00000') is not None and \
            cluster.accounting.cache_reads('get', 'virtualmachines') > reads
    wait_for(cached)
    sim.request_log.clear()
    for _ in range(5):
        assert cluster.get_vm('ns-000', 'vm-00002') is not None
        # The whole collection cannot be told: not a partial answer.
        with pytest.raises(apierrors.Unreadable):
            cluster.list_vms()
    # Reads make no call; the informer of ns-001 keeps retrying its
    # paginated list (limit set) meanwhile.
    assert sim.request_log.entries(verb='list', resource='virtualmachines',
                                   query=lambda q: 'limit' not in q) == []
    sim.authz.clear()
    wait_for(lambda: len(listed(cluster)) == 4)


def listed(cluster):
    try:
        return cluster.list_vms()
    except apierrors.Unreadable:
        return []
