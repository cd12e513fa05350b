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

"""An index lookup costs the same however many namespaces are served."""

import pytest
from tests.functional.kube.conftest import kube_calls
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.kube import indices
from sushy_kubevirt.kube import informer
from sushy_kubevirt.kube import lister
from sushy_kubevirt.simulator import objects

GROUP, VERSION = 'kubevirt.io', 'v1'
NEW_UUID = '6a1c2f4e-97b1-4d0e-8c1a-2b3c4d5e6f70'


@pytest.fixture
def sim(sim_factory):
    """Six VMs in three namespaces."""
    return sim_factory(vms=6, namespaces=3)


@pytest.fixture
def counted(monkeypatch):
    """``{what: calls}``: index probes, reads of matches, lister lookups."""
    counts = {'probes': 0, 'reads': 0, 'listers': 0}

    def counting(what, fn):
        def counted_fn(*args, **kwargs):
            counts[what] += 1
            return fn(*args, **kwargs)
        return counted_fn
    monkeypatch.setattr(indices.Indices, 'keys',
                        counting('probes', indices.Indices.keys))
    monkeypatch.setattr(informer.Informer, 'matching',
                        counting('reads', informer.Informer.matching))
    monkeypatch.setattr(lister.Lister, 'by_index',
                        counting('listers', lister.Lister.by_index))
    return counts


def lookups(sim, cluster, counted):
    """The counts of a hit and a miss of each index, after sync."""
    assert cluster.wait_for_sync(30)
    vm = cluster.get_vm(objects.namespace_names(sim.namespaces)[-1],
                        'vm-%05d' % (sim.vms - 1))
    uuid = lookup.INDEXERS['uuid'](vm)[0]
    sim.request_log.clear()
    for key in counted:
        counted[key] = 0
    assert cluster.find_vms('uuid', uuid) == [vm]
    assert cluster.find_vms('name', vm['metadata']['name']) == [vm]
    assert cluster.find_vms('uuid', 'no-such-uuid') == []
    assert kube_calls(sim, resource=lambda r: True) == []
    return dict(counted)


@pytest.mark.parametrize('per_namespace', [True, False],
                         ids=['per-namespace', 'cluster-wide'])
def test_a_lookup_does_not_grow_with_the_namespaces(
        sim_factory, cluster_factory, counted, per_namespace):
    found = []
    for count in (1, 20):
        sim = sim_factory(vms=2 * count, namespaces=count)
        cluster = cluster_factory(
            sim, namespaces=tuple(objects.namespace_names(count))
            if per_namespace else None)
        found.append(lookups(sim, cluster, counted))
    # One probe per lookup, one read per match, no lister asked.
    assert found == [{'probes': 3, 'reads': 2, 'listers': 0}] * 2


def test_a_vm_moving_to_another_uuid_is_found_there(
        sim, cluster_factory, custom_api):
    cluster = cluster_factory(
        sim, namespaces=tuple(objects.namespace_names(3)))
    assert cluster.wait_for_sync(30)
    vm = cluster.get_vm('ns-001', 'vm-00001')
    old = lookup.INDEXERS['uuid'](vm)[0]
    custom_api.patch_namespaced_custom_object(
        GROUP, VERSION, 'ns-001', 'virtualmachines', 'vm-00001',
        {'spec': {'template': {'spec': {'domain': {
            'firmware': {'uuid': NEW_UUID.upper()}}}}}})
    moved = wait_for(lambda: cluster.find_vms('uuid', NEW_UUID))
    assert [v['metadata']['name'] for v in moved] == ['vm-00001']
    assert cluster.find_vms('uuid', old) == []
    custom_api.delete_namespaced_custom_object(
        GROUP, VERSION, 'ns-001', 'virtualmachines', 'vm-00001')
    wait_for(lambda: cluster.find_vms('uuid', NEW_UUID) == [])
    assert [v['metadata']['namespace'] for v in
            cluster.find_vms('name', 'vm-00004')] == ['ns-001']


def test_a_write_is_found_at_once_in_its_namespace(sim, cluster_factory):
    cluster = cluster_factory(
        sim, namespaces=tuple(objects.namespace_names(3)))
    assert cluster.wait_for_sync(30)
    # Hold back the VM watch events: only the write's overlay has it.
    watch = dict(path='/virtualmachines$', query={'watch': 'true'})
    sim.faults.event_delay(30.0, times=None, **watch)
    seen = len(kube_calls(sim, 'watch'))
    wait_for(lambda: len(kube_calls(sim, 'watch')) > seen + 2)
    patched = cluster.patch_vm('ns-002', 'vm-00005', [
        {'op': 'add', 'path': '/spec/template/spec/domain/firmware/uuid',
         'value': NEW_UUID}])
    rv = patched['metadata']['resourceVersion']
    assert [v['metadata']['resourceVersion'] for v in cluster.find_vms(
        'uuid', NEW_UUID)] == [rv]
    assert cluster.find_vms('name', 'vm-00005')[0]['metadata'][
        'resourceVersion'] == rv
    assert cluster.cached_vm('ns-002', 'vm-00005')['metadata'][
        'resourceVersion'] == rv
