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

"""The Cluster's VM indexes: every System id is an O(1) lookup."""

import os

from sushy_kubevirt import config
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.kube import cluster
from sushy_kubevirt.kube import dispatcher
from sushy_kubevirt.kube import flatindex
from sushy_kubevirt.kube import informer
from sushy_kubevirt.kube import lister
from sushy_kubevirt.kube import resources
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import objects

UPPER = 'A3F1C6E2-0B7D-4F5A-9C3E-8D2B1A0F6E47'


def _vm(name, uuid=None):
    vm = objects.make_vm(name)
    vm['metadata'].update(resourceVersion='1')
    firmware = vm['spec']['template']['spec']['domain']['firmware']
    if uuid:
        firmware['uuid'] = uuid
    else:
        firmware.pop('uuid', None)
    return vm


def _synced_cluster(*vms):
    """A Cluster whose (unstarted) VM informer holds ``vms``, synced."""
    synced = cluster.Cluster(config.Settings(), indexers=lookup.INDEXERS)
    index = flatindex.FlatIndex(synced.indexers, lambda namespace: cache)
    cache = informer.Informer(None, resources.VM, dispatcher.Dispatcher(),
                              indexers=index.indices)
    cache._replace(list(vms), '1')
    reader = lister.Lister(cache, None, synced.accounting)
    synced._running = cluster._Running(
        None, None, {(resources.VM.plural, None): cache},
        {(resources.VM.plural, None): reader}, index, (None,))
    synced._pid = os.getpid()
    return synced


def test_uuid_index_is_canonical_lower_case_with_legacy_default():
    upper, legacy = _vm('upper', UPPER), _vm('legacy')
    uuid_key = lookup.INDEXERS['uuid']
    assert uuid_key(upper) == [UPPER.lower()]
    assert uuid_key(legacy) == [identity.legacy_firmware_uuid('legacy')]
    synced = _synced_cluster(upper, legacy)
    ids = lookup.Lookup(synced, None)
    for text in (UPPER, UPPER.lower()):
        assert ids._by_uuid(text) == [upper]
    legacy_id = identity.firmware_uuid(legacy)
    assert ids._by_uuid(legacy_id.upper()) == [legacy]
    assert synced.find_vms('uuid', legacy_id) == [legacy]
    assert ids._by_uuid('00000000-0000-0000-0000-000000000000') == []
    assert synced.accounting.live_calls() == 0
