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

"""A 429 (API Priority and Fairness) is retried after its Retry-After.

kube-apiserver rejects a throttled request before executing it, so the
same write is sent again, a bounded number of times
(:data:`sushy_kubevirt.kube.api.THROTTLED_ATTEMPTS`).
"""

import pytest
from tests import backend
from tests.functional.kube.conftest import kube_calls

from sushy_kubevirt.kube import api
from sushy_kubevirt.kube import apierrors

VM_PATH = '/virtualmachines/vm-00001$'

#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


def _annotate(value):
    return [{'op': 'add', 'path': '/metadata/annotations',
             'value': {'throttled': value}}]


def test_write_retried_after_429(sim, cluster):
    sim.faults.status(429, retry_after=0.2, method='PATCH', path=VM_PATH,
                      times=api.THROTTLED_ATTEMPTS - 1)
    sim.request_log.clear()
    patched = cluster.patch_vm('default', 'vm-00001', _annotate('yes'))
    assert patched['metadata']['annotations'] == {'throttled': 'yes'}
    statuses = [e['status'] for e in kube_calls(sim, 'patch')]
    assert statuses == [429] * (api.THROTTLED_ATTEMPTS - 1) + [200]
    assert cluster.accounting.live_calls('patch', 'virtualmachines') == \
        api.THROTTLED_ATTEMPTS


def test_subresource_retried(sim, cluster):
    sim.faults.status(429, retry_after=0.1, method='PUT',
                      path='/vm-00002/start$', times=1)
    sim.request_log.clear()
    cluster.vm_subresource('default', 'vm-00002', 'start', {})
    assert [e['status'] for e in kube_calls(
        sim, 'update', resource='virtualmachines/start')] == [429, 202]


def test_throttled_beyond_the_bound_raises(sim, cluster):
    sim.faults.status(429, retry_after=0.1, method='PATCH', path=VM_PATH,
                      times=api.THROTTLED_ATTEMPTS + 1)
    sim.request_log.clear()
    with pytest.raises(apierrors.TooManyRequests):
        cluster.patch_vm('default', 'vm-00001', _annotate('no'))
    assert len(kube_calls(sim, 'patch')) == api.THROTTLED_ATTEMPTS
    vm = cluster.get_vm_live('default', 'vm-00001')
    assert 'throttled' not in (vm['metadata'].get('annotations') or {})


def test_long_retry_after_is_not_waited(sim, cluster):
    sim.faults.status(429, retry_after=api.THROTTLED_WAIT + 1,
                      method='PATCH', path=VM_PATH, times=1)
    sim.request_log.clear()
    with pytest.raises(apierrors.TooManyRequests):
        cluster.patch_vm('default', 'vm-00001', _annotate('no'))
    assert len(kube_calls(sim, 'patch')) == 1
