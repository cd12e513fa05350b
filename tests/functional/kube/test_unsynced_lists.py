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

"""A list read before sync: the informer's list in progress, else paged."""

import dataclasses

from tests import backend
from tests.functional.kube.conftest import kube_calls
from tests.functional.kube.conftest import TIMINGS

from sushy_kubevirt import config
from sushy_kubevirt.kube import lister

#: The informers' list pages 2 VMs at a time.
PAGED = dataclasses.replace(TIMINGS, page_size=2)
VMS = ['vm-%05d' % i for i in range(6)]

#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


def _names(vms):
    return sorted(v['metadata']['name'] for v in vms)


def test_a_list_before_sync_waits_for_the_first_list_in_progress(
        sim_factory, cluster_factory):
    sim = sim_factory(vms=6)
    # Three pages, each 0.3 s: the list progresses, and ends after 0.9 s.
    sim.faults.latency(0.3, method='GET', path='/virtualmachines$',
                       query={'limit': '2'})
    cluster = cluster_factory(sim, timings=PAGED, namespaces=())
    assert _names(cluster.list_vms()) == VMS
    assert len(kube_calls(sim, 'list', query={'limit': '2'})) == 3
    # No list of its own: the read answered from the synced cache.
    assert [e['query'] for e in kube_calls(sim, 'list')
            if e['query'].get('limit') != '2'] == []
    assert cluster.accounting.live_calls('list', 'virtualmachines') == 3
    assert cluster.accounting.cache_reads('list', 'virtualmachines') == 1


def test_a_list_of_one_namespace_before_sync_goes_live(sim_factory,
                                                       cluster_factory):
    sim = sim_factory(vms=6)
    sim.faults.latency(0.3, method='GET', path='/virtualmachines$',
                       query={'limit': '2'})
    cluster = cluster_factory(sim, timings=PAGED)
    assert _names(cluster.list_vms()) == VMS
    assert len(kube_calls(sim, 'list', query={'limit': '1000'})) == 1


def test_a_live_list_before_sync_is_paged(sim_factory, cluster_factory,
                                          monkeypatch):
    monkeypatch.setattr(lister, 'PAGE_SIZE', 4)
    monkeypatch.setattr(lister, 'LIST_PROGRESS_S', 0.2)
    sim = sim_factory(vms=6)
    # The informers' first page comes after 1.5 s: no progress meanwhile.
    sim.faults.latency(1.5, method='GET', path='/virtualmachines$',
                       query={'limit': '2'}, times=1)
    cluster = cluster_factory(sim, timings=PAGED)
    assert _names(cluster.list_vms()) == VMS
    live = [e['query'] for e in kube_calls(sim, 'list')
            if e['query'].get('limit') == '4']
    assert len(live) == 2 and 'continue' in live[1]
    assert kube_calls(sim, 'list', query={'limit': None}) == []
    assert cluster.accounting.cache_reads('list', 'virtualmachines') == 0
    assert cluster.wait_for_sync(10)


def test_a_live_list_ends_when_the_informer_syncs(sim_factory,
                                                  cluster_factory,
                                                  monkeypatch):
    monkeypatch.setattr(lister, 'PAGE_SIZE', 2)
    monkeypatch.setattr(lister, 'LIST_PROGRESS_S', 0.2)
    sim = sim_factory(vms=6)
    # The informers' list comes after 1 s; the live list's second page
    # after 2 s: the informer has synced by then.
    sim.faults.latency(1.0, method='GET', path='/virtualmachines$',
                       query={'limit': '500'}, times=1)
    sim.faults.latency(2.0, method='GET', path='/virtualmachines$',
                       query={'limit': '2', 'continue': None}, times=1)
    cluster = cluster_factory(sim)
    assert _names(cluster.list_vms()) == VMS
    assert len(kube_calls(sim, 'list', query={'limit': '2'})) == 2
    assert cluster.accounting.cache_reads('list', 'virtualmachines') == 1


def test_a_live_list_before_sync_keeps_the_shards_namespaces(
        sim_factory, cluster_factory, monkeypatch):
    monkeypatch.setattr(lister, 'PAGE_SIZE', 4)
    monkeypatch.setattr(lister, 'LIST_PROGRESS_S', 0.2)
    sim = sim_factory(vms=12, namespaces=4)
    everything = [(v['metadata']['namespace'], v['metadata']['name'])
                  for v in sim.store.list(sim.store.resource(
                      'kubevirt.io', 'virtualmachines'))[0]]
    shard = config.Shard(0, 2)
    owned = sorted(key for key in everything if shard.owns(key[0]))
    assert owned and len(owned) < len(everything)
    sim.faults.latency(1.5, method='GET', path='/virtualmachines$',
                       query={'limit': '2'}, times=1)
    cluster = cluster_factory(sim, timings=PAGED, namespaces=(),
                              shard=shard)
    found = sorted((v['metadata']['namespace'], v['metadata']['name'])
                   for v in cluster.list_vms())
    assert found == owned
    assert cluster.accounting.cache_reads('list', 'virtualmachines') == 0
    assert cluster.wait_for_sync(10)
    assert sorted((v['metadata']['namespace'], v['metadata']['name'])
                  for v in cluster.list_vms()) == owned
