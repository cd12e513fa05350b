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

"""Read-your-writes, guarded patches, subresources, VMI handlers."""

import time

import pytest
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded

GROUP, VERSION = 'kubevirt.io', 'v1'
VM_WATCH = dict(path='/virtualmachines$', query={'watch': 'true'})


def cores(vm):
    return vm['spec']['template']['spec']['domain']['cpu']['cores']


def annotate(key, value, vm=None):
    if vm is not None and not vm['metadata'].get('annotations'):
        return [{'op': 'add', 'path': '/metadata/annotations',
                 'value': {key: value}}]
    return [{'op': 'add', 'path': '/metadata/annotations/' + key,
             'value': value}]


def calls(sim, verb):
    return sim.request_log.entries(verb=verb, resource='virtualmachines')


def freeze_vm_watch(sim):
    """Hold back VM watch events from now on; return the fault rule."""
    rule = sim.faults.event_delay(30.0, times=None, **VM_WATCH)
    seen = len(calls(sim, 'watch'))
    # The watch open before the rule ends (1 s timeout); its successor
    # is held back.
    wait_for(lambda: len(calls(sim, 'watch')) > seen)
    return rule


def set_cores(custom_api, name, value):
    custom_api.patch_namespaced_custom_object(
        GROUP, VERSION, 'default', 'virtualmachines', name,
        {'spec': {'template': {'spec': {'domain': {'cpu': {
            'cores': value}}}}}})


def test_read_your_writes_without_get(sim, cluster, custom_api):
    rule = freeze_vm_watch(sim)
    sim.request_log.clear()
    patched = cluster.patch_vm(
        'default', 'vm-00001',
        annotate('mine', 'yes', cluster.get_vm('default', 'vm-00001')))
    assert patched['metadata']['annotations']['mine'] == 'yes'
    vm = cluster.get_vm('default', 'vm-00001')
    assert vm['metadata']['annotations']['mine'] == 'yes'
    assert 'managedFields' not in vm['metadata']
    assert [v['metadata']['annotations'].get('mine') for v in
            cluster.find_vms('name', 'vm-00001')] == ['yes']
    assert len([v for v in cluster.list_vms()
                if v['metadata'].get('annotations', {}).get('mine')]) == 1
    assert calls(sim, 'get') == [] and calls(sim, 'list') == []
    # Another client's later edit wins once the watch delivers it.
    set_cores(custom_api, 'vm-00001', 3)
    assert cores(cluster.get_vm('default', 'vm-00001')) == 2
    sim.faults.remove(rule)
    wait_for(lambda: cores(cluster.get_vm('default', 'vm-00001')) == 3)
    vm = cluster.get_vm('default', 'vm-00001')
    assert vm['metadata']['annotations']['mine'] == 'yes'


def test_guarded_patch_retries_on_conflict(sim, cluster, custom_api):
    freeze_vm_watch(sim)
    set_cores(custom_api, 'vm-00002', 3)
    t0 = time.time()
    seen = []

    def build(vm):
        seen.append(cores(vm))
        return annotate('seen-cores', str(cores(vm)), vm)

    vm = guarded.guarded_patch(cluster, 'default', 'vm-00002', build)
    assert seen == [2, 3]
    assert vm['metadata']['annotations']['seen-cores'] == '3'
    # The simulator logs a request after answering it: skip the edit.
    patches = [p for p in calls(sim, 'patch') if p['started'] >= t0]
    assert [p['status'] for p in patches] == [422, 200]
    assert len([g for g in calls(sim, 'get') if g['started'] >= t0]) == 1
    assert cluster.get_vm('default', 'vm-00002')['metadata'][
        'annotations']['seen-cores'] == '3'


def test_guarded_patch_nothing_to_do_makes_no_call(sim, cluster):
    sim.request_log.clear()
    vm = guarded.guarded_patch(cluster, 'default', 'vm-00000',
                               lambda vm: [])
    assert vm['metadata']['name'] == 'vm-00000'
    assert sim.request_log.entries(verb=lambda v: v != 'watch') == []
    with pytest.raises(apierrors.NotFound):
        guarded.guarded_patch(cluster, 'default', 'missing', lambda vm: [])


def test_guarded_patch_that_cannot_apply_is_invalid(sim, cluster):
    sim.request_log.clear()
    with pytest.raises(apierrors.Invalid):
        guarded.guarded_patch(
            cluster, 'default', 'vm-00000',
            lambda vm: [{'op': 'remove', 'path': '/metadata/labels/nope'}])
    assert len(calls(sim, 'patch')) == 1


def test_vm_start_reaches_vmi_handler(sim, cluster):
    events = []
    cluster.add_vmi_handler(lambda kind, vmi: events.append(
        (kind, vmi['metadata']['name'])))
    cluster.vm_subresource('default', 'vm-00003', 'start')
    wait_for(lambda: sim.request_log.entries(
        verb='update', resource='virtualmachines/start', status=202))
    wait_for(lambda: ('ADDED', 'vm-00003') in events)
    wait_for(lambda: cluster.get_vmi('default', 'vm-00003'))
    assert cluster.accounting.live_calls(
        'update', 'virtualmachines/start') == 1


def test_datavolume_create_delete_read_back(sim, cluster_factory):
    cluster = cluster_factory(sim, datavolumes=True)
    assert cluster.wait_for_sync(10)
    body = {'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
            'metadata': {'name': 'iso-1'},
            'spec': {'source': {'blank': {}},
                     'storage': {'resources': {'requests': {
                         'storage': '1Gi'}}}}}
    sim.request_log.clear()
    cluster.create_datavolume('default', body)
    assert cluster.get_datavolume('default', 'iso-1') is not None
    cluster.delete_datavolume('default', 'iso-1')
    assert cluster.get_datavolume('default', 'iso-1') is None
    assert sim.request_log.entries(verb='get') == []
    wait_for(lambda: cluster.get_datavolume('default', 'iso-1') is None)
