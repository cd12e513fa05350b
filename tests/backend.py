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

"""The cluster under the functional suites: the simulator or a real one.

``$SUSHY_KUBEVIRT_TEST_BACKEND`` chooses ``simulator`` (the default) or
``kube-apiserver`` (``tox -e realkube``: a real control plane with the
simulated KubeVirt and CDI, ``sushy_kubevirt.simulator.realcluster``).
``start(**kwargs)`` takes ``Simulator``'s keyword arguments. On the real
backend the emulator's kubeconfig is its ServiceAccount's, under the
shipped RBAC only, and a test that needs what only the simulator has
(fault injection, its authorizer, its knobs) is skipped, naming it.
"""

import os

import pytest
import requests
import yaml

from sushy_kubevirt import simulator
from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import realcluster
from sushy_kubevirt.simulator import Simulator

_TYPES = {rt.key: rt for rt in simulator.CORE_RESOURCES}
BACKEND = os.environ.get('SUSHY_KUBEVIRT_TEST_BACKEND', 'simulator')
REAL = BACKEND == 'kube-apiserver'
#: Simulator arguments a real control plane has too.
PORTABLE = {'vms', 'namespaces', 'time_scale', 'stage_delays',
            'guest_agent', 'crd_schemas'}
#: Timing knobs of the simulator's API server that tests set to be quick;
#: kube-apiserver keeps its own (a bookmark a minute, watches of 30-60 min).
TIMINGS = {'bookmark_interval', 'min_request_timeout'}
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


#: What only the simulator's store has (its global resourceVersion, its
#: own compaction of the watch history).
STORE_ONLY = {'resource_version', 'compacted_resource_version', 'compact',
              'snapshot', 'watch', 'close_watchers', 'set_schema'}


def start(**kwargs):
    """A started cluster of the chosen backend."""
    if not REAL:
        return Simulator(**kwargs).start()
    other = sorted(set(kwargs) - PORTABLE - TIMINGS)
    if other:
        pytest.skip('needs the simulator (%s)' % ', '.join(other))
    return Real(**{k: v for k, v in kwargs.items() if k in PORTABLE})\
        .start()


def log_complete(sim):
    """Wait until ``sim.request_log`` holds the requests answered so far.

    A sentinel request, logged after them: the simulator logs a request
    before it answers; kube-apiserver writes an audit line as a request
    completes, so the sentinel goes as the emulator's user and its line
    is awaited.
    """
    if REAL:
        sim.emulator_get('/version')
    else:
        requests.get(sim.url + '/version', timeout=10)
    sim.wait_for(lambda: sim.request_log.count(path='/version'), 5.0)


def write_admin_kubeconfig(sim, path):
    """A kubeconfig of a cluster administrator.

    Another user than the emulator, whose kubeconfig
    ``sim.write_kubeconfig`` writes on the real backend.
    """
    if REAL:
        return sim.write_admin_kubeconfig(path)
    return sim.write_kubeconfig(path)


def admin_request(sim, method, path, body=None):
    """One API call as the administrator: ``(status, decoded body)``."""
    if REAL:
        return sim.control_plane.request(method, path, body)
    answer = requests.request(method, sim.url + path, json=body, timeout=30,
                              headers={'Authorization': 'Bearer '
                                       + sim.token})
    return answer.status_code, answer.json()


simulator_only = pytest.mark.skipif(
    REAL, reason='tests the simulator itself')


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
