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

"""Stored state: global resourceVersion, no-op writes, metadata rules."""

from kubernetes import client
import pytest
from tests.functional.simulator import apitools

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)


def test_one_global_resource_version_across_resources(custom, kube_client,
                                                      simulator):
    start = simulator.store.resource_version
    assert start >= 1_000_000
    w = apitools.create(custom, 'w1')
    core = client.CoreV1Api(kube_client)
    cm = core.create_namespaced_config_map('default', client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name='c1'), data={'a': 'b'}))
    w2 = apitools.create(custom, 'w2')
    rvs = [w['metadata']['resourceVersion'], cm.metadata.resource_version,
           w2['metadata']['resourceVersion']]
    assert all(isinstance(rv, str) for rv in rvs)
    assert [int(rv) for rv in rvs] == [start + 1, start + 2, start + 3]
    listed = custom.list_namespaced_custom_object(G, V, 'default', P)
    assert listed['metadata']['resourceVersion'] == str(start + 3)


def test_noop_write_keeps_resource_version_and_emits_nothing(custom,
                                                             simulator):
    obj = apitools.create(custom, 'w1')
    rv = obj['metadata']['resourceVersion']
    watcher = simulator.store.watch(apitools.WIDGETS, 'default', rv)
    out = custom.patch_namespaced_custom_object(G, V, 'default', P, 'w1',
                                                {'spec': {'size': 1}})
    assert out['metadata']['resourceVersion'] == rv
    out = custom.replace_namespaced_custom_object(G, V, 'default', P, 'w1',
                                                  out)
    assert out['metadata']['resourceVersion'] == rv
    assert simulator.store.resource_version == int(rv)
    assert watcher.next(0.05) is None
    watcher.close()


def test_metadata_uid_timestamp_generation_managed_fields(custom):
    obj = apitools.create(custom, 'w1', labels={'a': 'b'})
    meta = obj['metadata']
    assert len(meta['uid']) == 36
    assert meta['creationTimestamp'].endswith('Z')
    assert meta['generation'] == 1
    fields = meta['managedFields']
    assert fields and fields[0]['fieldsType'] == 'FieldsV1'
    assert fields[0]['operation'] == 'Update'
    assert 'f:spec' in fields[0]['fieldsV1']
    out = custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w1', {'metadata': {'labels': {'c': 'd'}}})
    assert out['metadata']['generation'] == 1  # metadata only
    assert out['metadata']['uid'] == meta['uid']
    out = custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w1', {'spec': {'size': 2}})
    assert out['metadata']['generation'] == 2
    assert out['metadata']['creationTimestamp'] == meta['creationTimestamp']


def test_server_owned_metadata_cannot_be_overwritten(custom):
    obj = apitools.create(custom, 'w1')
    out = custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'w1',
        {'metadata': {'uid': 'forged', 'generation': 40,
                      'creationTimestamp': '2000-01-01T00:00:00Z'}})
    assert out['metadata']['uid'] == obj['metadata']['uid']
    assert out['metadata']['generation'] == 1
    assert out['metadata']['creationTimestamp'] == \
        obj['metadata']['creationTimestamp']


def test_history_is_bounded_and_compaction_recorded(simulator, custom):
    simulator.store.history_size = 5
    for i in range(8):
        apitools.create(custom, 'w%d' % i)
    store = simulator.store
    assert store.compacted_resource_version == store.resource_version - 5
    store.compact()
    assert store.compacted_resource_version == store.resource_version
