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

"""The real backend of ``tests.backend``: ``RealCluster`` as a test sees it.

Imported only on that backend: the control plane needs the
``controlplane`` extra (``cryptography``).
"""

import pytest
import yaml

from sushy_kubevirt import simulator
from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import realcluster

_TYPES = {rt.key: rt for rt in simulator.CORE_RESOURCES}
#: What only the simulator's store has (its global resourceVersion, its
#: own compaction of the watch history).
STORE_ONLY = {'resource_version', 'compacted_resource_version', 'compact',
              'snapshot', 'watch', 'close_watchers', 'set_schema'}
#: What only the simulator has, as a skip reason.
SIMULATOR_ONLY = {
    'faults': "the simulator's fault injection",
    'authz': "the simulator's authorizer",
    'control': "the simulator's control API",
    'start_control': "the simulator's control API",
    'admission': "the simulator's in-process admission",
    'subresources': "the simulator's in-process subresources",
    'register': 'resource types registered in-process',
    'register_subresource': 'subresources registered in-process',
    'schemas': "the simulator's schema objects",
}


class LiveStore:
    """The external controllers' store, but every read is a live GET.

    A test's oracle must see the cluster as it is now, not as a watch
    cache last heard of it.
    """

    def __init__(self, store):
        self._store = store

    def __getattr__(self, name):
        if name in STORE_ONLY:
            pytest.skip("needs the simulator's store (%s)" % name)
        return getattr(self._store, name)

    def resource(self, group, plural):
        """Any type the simulator serves, watched by the controllers or not."""
        try:
            return self._store.resource(group, plural)
        except KeyError:
            return _TYPES['%s/%s' % (group, plural)]

    def try_get(self, rt, namespace, name):
        try:
            return self.get(rt, namespace, name)
        except apistatus.ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def get(self, rt, namespace, name):
        return _typed(rt, self._store.request(
            'GET', self._store.path(rt, namespace, name)))

    def get_ref(self, rt, namespace, name):
        return self.try_get(rt, namespace, name)

    def list(self, rt, namespace=None):
        body = self._store.request('GET', self._store.path(rt, namespace))
        items = [_typed(rt, obj) for obj in body['items']]
        return items, body['metadata']['resourceVersion']


def _typed(rt, obj):
    """List items of built-in types carry no apiVersion and kind."""
    return dict(obj, apiVersion=rt.api_version, kind=rt.kind)


class Real(realcluster.RealCluster):
    """``RealCluster`` where a simulator-only attribute skips the test."""

    token = None

    def start(self):
        super().start()
        self.store = LiveStore(self.store)
        return self

    def write_kubeconfig(self, path, **kwargs):
        path = super().write_kubeconfig(path, **kwargs)
        with open(path) as stream:
            self.token = yaml.safe_load(stream)['users'][0]['user']['token']
        return path

    def emulator_get(self, path):
        """GET ``path`` as the emulator's ServiceAccount."""
        return self.control_plane.request('GET', path, token=self.token)

    def __getattr__(self, name):
        if name in SIMULATOR_ONLY:
            pytest.skip('needs %s' % SIMULATOR_ONLY[name])
        raise AttributeError(name)
