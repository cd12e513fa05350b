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

"""Seeding: stamped VMs are what the ordinary write path creates."""

import pytest
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import Simulator
from sushy_kubevirt.simulator import virt

pytestmark = pytest.mark.simulator(vms=6, namespaces=2)
NAMES = [('ns-%03d' % (i % 2), 'vm-%05d' % i) for i in range(6)]


def _objects(sim, ns, name):
    store = sim.store
    pvc_rt = store.resource('', 'persistentvolumeclaims')
    return {'vm': store.get(virt.VM_RT, ns, name),
            'dv': store.get(cdi.DV_RT, ns, name + '-root'),
            'pvc': store.get(pvc_rt, ns, name + '-root')}


def _normal(value, uids):
    """``value`` with uids named by role, no RVs and times."""
    if isinstance(value, dict):
        return {_normal(k, uids): _normal(v, uids) for k, v in value.items()
                if k not in ('resourceVersion', 'time', 'creationTimestamp',
                             'lastTransitionTime', 'lastHeartbeatTime',
                             'lastProbeTime')}
    if isinstance(value, list):
        return [_normal(v, uids) for v in value]
    if isinstance(value, str):   # uids in values and in fieldsV1 keys
        for uid, role in uids.items():
            value = value.replace(uid, role)
    return value


def _normalised(found):
    uids = {obj['metadata']['uid']: '<%s uid>' % role
            for role, obj in found.items()}
    return _normal(found, uids)


def test_stamped_objects_equal_created_ones(simulator):
    created = Simulator(vms=0, namespaces=2).start()
    try:
        for ns, name in NAMES:
            objects._create(created.store, ns, name)
        for ns, name in NAMES:
            assert _normalised(_objects(simulator, ns, name)) == \
                _normalised(_objects(created, ns, name)), name
    finally:
        created.stop()


def test_stamped_objects_have_their_own_uids_and_versions(simulator):
    found = [_objects(simulator, ns, name) for ns, name in NAMES]
    uids = [o['metadata']['uid'] for f in found for o in f.values()]
    rvs = [o['metadata']['resourceVersion'] for f in found
           for o in f.values()]
    assert len(set(uids)) == len(uids) == 18
    assert len(set(rvs)) == len(rvs)
    dv = found[-1]['dv']
    assert dv['metadata']['ownerReferences'][0]['uid'] == \
        found[-1]['vm']['metadata']['uid']


def test_controllers_know_stamped_objects(simulator, custom):
    ns, name = NAMES[-1]
    vmtools.action(custom, name, 'start', namespace=ns)
    simulator.wait_for(lambda: (simulator.store.try_get(
        virt.VMI_RT, ns, name) or {}).get('status', {}).get(
            'phase') == 'Running')
    simulator.store.delete(virt.VM_RT, ns, name)
    pvc_rt = simulator.store.resource('', 'persistentvolumeclaims')
    # Garbage collected: deleted, or kept by pvc-protection while the
    # VMI shuts down.
    simulator.wait_for(lambda: (simulator.store.try_get(
        pvc_rt, ns, name + '-root') or {'metadata': {
            'deletionTimestamp': 'gone'}})['metadata'].get(
                'deletionTimestamp'))


def test_seeding_makes_no_controller_writes(simulator):
    rv = simulator.store.resource_version
    with pytest.raises(TimeoutError):
        simulator.wait_for(lambda: simulator.store.resource_version != rv,
                           timeout=1.0)
