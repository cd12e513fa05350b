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

"""AfterBoot over a fake Cluster whose cached VM lags the API server."""

import copy
import logging

from sushy_kubevirt.drivers import afterboot
from sushy_kubevirt.kube import apierrors

KEY = 'example.org/pending'


class StaleCluster:
    """The cache still shows the intent; another process finished it."""

    def __init__(self):
        self.cached = {'metadata': {'name': 'vm', 'namespace': 'ns',
                                    'resourceVersion': '1',
                                    'annotations': {KEY: 'x'}}}
        self.live = copy.deepcopy(self.cached)
        self.live['metadata']['resourceVersion'] = '2'
        del self.live['metadata']['annotations'][KEY]
        self.calls = []

    def get_vm(self, namespace, name):
        return self.cached

    def get_vm_live(self, namespace, name):
        self.calls.append('get')
        return self.live

    def patch_vm(self, namespace, name, ops):
        self.calls.append('patch')
        raise apierrors.Conflict('the object has been modified', status=409)


def _handler(cluster):
    return afterboot.AfterBoot(
        cluster, logging.getLogger(__name__),
        lambda vm, vmi: KEY in vm['metadata']['annotations'],
        lambda vm, vmi: [{'op': 'remove', 'path': '/metadata/annotations/'
                          + KEY.replace('/', '~1')}]
        if KEY in vm['metadata']['annotations'] else [],
        'finishing')


def _vmi(uid):
    return {'metadata': {'name': 'vm', 'namespace': 'ns', 'uid': uid}}


def test_a_finished_vmi_costs_no_more_calls():
    cluster = StaleCluster()
    handler = _handler(cluster)
    handler('ADDED', _vmi('a'))
    assert cluster.calls == ['patch', 'get']
    # The VMI changes as it starts; the cache still lags: no call.
    handler('MODIFIED', _vmi('a'))
    handler('MODIFIED', _vmi('a'))
    assert cluster.calls == ['patch', 'get']
    # Another VMI is judged anew.
    handler('ADDED', _vmi('b'))
    assert cluster.calls == ['patch', 'get'] * 2


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(afterboot, 'FINISHED', 2)
    cluster = StaleCluster()
    handler = _handler(cluster)
    for uid in 'abc':
        handler('ADDED', _vmi(uid))
    handler('MODIFIED', _vmi('a'))
    assert cluster.calls == ['patch', 'get'] * 4
