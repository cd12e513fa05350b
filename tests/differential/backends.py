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

"""The two servers under the corpus: the simulator and a real control plane.

Both serve the test resource ``widgets.sim.example.com`` (a permissive
schema) and the KubeVirt and CDI CRDs with their real schemas, without
KubeVirt's controllers: what is compared is the API server.
"""

import ssl
import time

import requests
from requests import adapters

from sushy_kubevirt.controlplane import server
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import Simulator
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator.virt import model

WIDGETS = storage.ResourceType('sim.example.com', 'v1', 'widgets', 'Widget',
                               short_names=('wd',))
WIDGET_CRD = {
    'apiVersion': 'apiextensions.k8s.io/v1',
    'kind': 'CustomResourceDefinition',
    'metadata': {'name': 'widgets.sim.example.com'},
    'spec': {
        'group': 'sim.example.com', 'scope': 'Namespaced',
        'names': {'plural': 'widgets', 'singular': 'widget',
                  'kind': 'Widget', 'listKind': 'WidgetList',
                  'shortNames': ['wd']},
        'versions': [{
            'name': 'v1', 'served': True, 'storage': True,
            'subresources': {'status': {}},
            'schema': {'openAPIV3Schema': {
                'type': 'object',
                'x-kubernetes-preserve-unknown-fields': True}}}]}}


class Backend:
    """One server: its URL, token and an HTTP session to it."""

    name = None

    def __init__(self, url, token, ca_file=None):
        self.url = url
        self.token = token
        self.http = requests.Session()
        if ca_file:
            self.http.mount('https://', _CaAdapter(ca_file))
        self.http.headers['Authorization'] = 'Bearer ' + token
        self.http.headers['User-Agent'] = 'sushy-differential/1.0'

    def request(self, method, path, **kwargs):
        kwargs.setdefault('timeout', 30)
        return self.http.request(method, self.url + path, **kwargs)

    def compact(self):
        """Make every resourceVersion seen so far too old."""
        raise NotImplementedError

    def stop(self):
        self.http.close()


class _CaAdapter(adapters.HTTPAdapter):
    """Trust one CA file, without urllib3's X509 strict mode.

    The control plane's certificates have no key identifiers, which the
    strict mode requires.
    """

    def __init__(self, ca_file):
        self.context = ssl.create_default_context(cafile=ca_file)
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        kwargs['ssl_context'] = self.context
        return super().init_poolmanager(*args, **kwargs)


class SimulatorBackend(Backend):
    name = 'simulator'

    def __init__(self, crd_schemas):
        # As kube-apiserver: bookmarks every minute, no KubeVirt
        # controllers (the KubeVirt types are served as bare CRDs).
        self.sim = Simulator(install=False, crd_schemas=crd_schemas,
                             bookmark_interval=60.0, too_large_wait=3.0)
        self.sim.register(WIDGETS)
        for rt in (model.VM_RT, model.VMI_RT, cdi.DV_RT):
            self.sim.register(rt)
            self.sim.store.set_schema(
                rt, self.sim.schemas['%s.%s' % (rt.plural, rt.group)])
        self.sim.start()
        super().__init__(self.sim.url, self.sim.token, self.sim.ca_file)

    def compact(self):
        self.sim.store.compact()

    def stop(self):
        super().stop()
        self.sim.stop()


class KubeBackend(Backend):
    name = 'kube'

    def __init__(self, crd_schemas):
        self.cp = server.ControlPlane(crd_schemas=crd_schemas).start()
        try:
            self.cp.install_crds([WIDGET_CRD])
        except BaseException:
            self.cp.stop()
            raise
        super().__init__(self.cp.url, self.cp.admin_token,
                         str(self.cp.ca_file))

    def compact(self):
        """Restart kube-apiserver, then compact etcd.

        The watch cache of a fresh kube-apiserver starts at the current
        revision, so older watches are 410 ``too old resource version``;
        the etcd compaction makes older exact lists and continue tokens
        410 too.
        """
        self.http.close()
        self.cp.kill_apiserver()
        self.cp.start_apiserver()
        self.cp.compact_etcd()
        self._await_watch_cache()

    def _await_watch_cache(self, timeout=30.0):
        """Wait until the widgets' new watch cache serves watches.

        Until then kube-apiserver answers 429 "storage is (re)initializing".
        """
        deadline = time.monotonic() + timeout
        while True:
            resp = self.request('GET', '/apis/sim.example.com/v1/widgets',
                                params={'watch': 'true', 'timeoutSeconds': '1',
                                        'resourceVersion': '0'})
            if resp.status_code != 429:
                return
            if time.monotonic() > deadline:
                raise AssertionError('watch cache not ready: %s' % resp.text)
            time.sleep(0.2)

    def stop(self):
        super().stop()
        self.cp.stop()
