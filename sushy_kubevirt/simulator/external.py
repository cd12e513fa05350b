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

"""The simulator's KubeVirt and CDI controllers against a real API server.

``External(kubeconfig, ...)`` is what ``virt.install`` and ``cdi.install``
use of a ``Simulator`` (``store``, ``time_scale``, ``stage_delays``,
``guest_agent``, ``register_admission``, ``register_subresource``) with a
``remote.RemoteStore`` as the store. ``start()``:

1. watches the types the controllers read and waits until they are listed;
2. serves virt-api's endpoints (``webhooks.WebhookServer``);
3. seeds ``vms`` VMs over ``namespaces`` namespaces (``objects.seed``)
   before any controller runs: the API server drops the status an object
   with a status subresource is created with, so the store writes it
   next, and a running CDI controller would meanwhile act on the
   DataVolume's empty status;
4. installs the KubeVirt and CDI controllers, CDI's without its garbage
   collector (kube-controller-manager's collects by ownerReferences);
5. registers virt-api: Namespace ``kubevirt``, Service ``virt-api`` of type
   ExternalName naming 127.0.0.1 (Endpoints and EndpointSlices refuse
   loopback addresses; the aggregator resolves an ExternalName service to
   https://<externalName>:<APIService port>), APIService
   ``v1.subresources.kubevirt.io`` on the server's port with ``caBundle``,
   and the Mutating/ValidatingWebhookConfigurations ``virt-api-mutator``
   and ``virt-api-validator`` (``clientConfig.url``, failurePolicy Fail)
   for every type with admission functions;
6. waits until the APIService is Available and discovery answers through
   kube-apiserver, and until the webhooks are in force (a dry-run VM
   create comes back defaulted; an invalid one is refused).

kube-apiserver checks the serving certificate for ``virt-api.kubevirt.svc``
(APIService) and for 127.0.0.1 (webhook URLs): ``webhook_cert`` must name
both (``SERVING_HOSTS``). The kubeconfig's user must be allowed to create
all of the above. ``stop()`` ends every thread and removes nothing from
the cluster (the webhooks, failurePolicy Fail, then refuse VM writes until
another ``External`` takes them over).
"""

import base64
import pathlib
import time

from sushy_kubevirt import simulator
from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import remote
from sushy_kubevirt.simulator import virt
from sushy_kubevirt.simulator import webhooks

NAMESPACE, SERVICE = 'kubevirt', 'virt-api'
SERVING_HOSTS = (webhooks.HOST, 'localhost',
                 '%s.%s.svc' % (SERVICE, NAMESPACE))
APISERVICES = '/apis/apiregistration.k8s.io/v1/apiservices'
APISERVICE = '%s.%s' % (webhooks.VERSION, webhooks.GROUP)
ADMISSION = '/apis/admissionregistration.k8s.io/v1/'
CONFIGURATIONS = {True: ('MutatingWebhookConfiguration', 'virt-api-mutator'),
                  False: ('ValidatingWebhookConfiguration',
                          'virt-api-validator')}
WATCHED = (simulator.NAMESPACES, simulator.SECRETS, simulator.CONFIGMAPS,
           simulator.PVCS, simulator.STORAGECLASSES, simulator.EVENTS,
           virt.VM_RT, virt.VMI_RT, cdi.DV_RT)
PROBE = 'sushy-kubevirt-webhook-probe'
READY_TIMEOUT = 60.0


class External:
    """KubeVirt and CDI, simulated, as controllers of a real cluster."""

    def __init__(self, kubeconfig, *, webhook_cert, webhook_key, client_ca,
                 ca_bundle, time_scale=1.0, stage_delays=None,
                 guest_agent=False, vms=0, namespaces=1, writer=None):
        self.time_scale = time_scale
        #: The users the simulated KubeVirt writes as (the kubeconfig's):
        #: virt-api keeps VMI status changes only from KubeVirt's accounts.
        self.kubevirt_users = frozenset([writer] if writer else ())
        self.stage_delays = dict(stage_delays or {})
        self.guest_agent = guest_agent
        self.vms = vms
        self.namespaces = namespaces
        self.ca_bundle = base64.b64encode(
            pathlib.Path(ca_bundle).read_bytes()).decode()
        self.admission = {}
        self.validation = {}
        self.subresources = {}
        self.components = {}
        self.store = remote.RemoteStore(kubeconfig)
        self.webhooks = webhooks.WebhookServer(self, webhook_cert,
                                               webhook_key, client_ca)

    # -- what the controllers use of a Simulator ---------------------------

    def register(self, rt):
        self.store.register(rt)

    def register_admission(self, rt, fn, validating=False):
        """``fn(operation, new, old, user)``, called by the webhooks."""
        hooks = self.validation if validating else self.admission
        hooks.setdefault(rt.key, []).append(fn)

    def register_subresource(self, group_version, plural, action, fn):
        """Serve PUT .../namespaces/{ns}/{plural}/{name}/{action}."""
        self.subresources[(group_version, plural, action)] = fn

    # -- lifecycle ----------------------------------------------------------

    @property
    def webhook_url(self):
        return self.webhooks.url

    def start(self):
        try:
            for rt in WATCHED:
                self.store.register(rt)
            self.store.wait_synced(READY_TIMEOUT)
            self.webhooks.start()
            objects.seed(self, self.vms, self.namespaces)
            self.components['kubevirt'] = virt.install(self)
            self.components['cdi'] = cdi.install(self, owner_gc=False)
            self._register_virt_api()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """End every thread; the cluster keeps what start() created."""
        for component in self.components.values():
            component.stop()
        self.components = {}
        self.webhooks.stop()
        self.store.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- registration in the cluster ---------------------------------------

    def _register_virt_api(self):
        self._apply('/api/v1/namespaces', {
            'apiVersion': 'v1', 'kind': 'Namespace',
            'metadata': {'name': NAMESPACE}})
        self._apply('/api/v1/namespaces/%s/services' % NAMESPACE, {
            'apiVersion': 'v1', 'kind': 'Service',
            'metadata': {'name': SERVICE, 'namespace': NAMESPACE},
            'spec': {'type': 'ExternalName',
                     'externalName': webhooks.HOST}})
        self._apply(APISERVICES, {
            'apiVersion': 'apiregistration.k8s.io/v1', 'kind': 'APIService',
            'metadata': {'name': APISERVICE},
            'spec': {'group': webhooks.GROUP, 'version': webhooks.VERSION,
                     'groupPriorityMinimum': 1000, 'versionPriority': 15,
                     'insecureSkipTLSVerify': False,
                     'caBundle': self.ca_bundle,
                     'service': {'namespace': NAMESPACE, 'name': SERVICE,
                                 'port': self.webhooks.port}}})
        for mutating in (True, False):
            self._apply_configuration(mutating)

    def _apply_configuration(self, mutating):
        kind, name = CONFIGURATIONS[mutating]
        hooks = self.admission if mutating else self.validation
        self._apply(ADMISSION + kind.lower() + 's', {
            'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': kind,
            'metadata': {'name': name},
            'webhooks': [self._webhook(self.store.resource(
                *key.split('/', 1)), mutating) for key in sorted(hooks)]})

    def _webhook(self, rt, mutating):
        """One webhook, named as virt-api names the VM's."""
        name = ('%s-mutator.%s' % (rt.plural, rt.group) if mutating
                else '%s-validator.%s' % (rt.singular, rt.group))
        suffix = 'mutate' if mutating else 'validate'
        return {
            'name': name, 'admissionReviewVersions': ['v1'],
            'sideEffects': 'None', 'failurePolicy': 'Fail',
            'timeoutSeconds': 10,
            'clientConfig': {'url': '%s/%s-%s' % (self.webhook_url,
                                                  rt.plural, suffix),
                             'caBundle': self.ca_bundle},
            'rules': [{'apiGroups': [rt.group], 'apiVersions': [rt.version],
                       'resources': [rt.plural],
                       'operations': ['CREATE', 'UPDATE'],
                       'scope': 'Namespaced' if rt.namespaced
                       else 'Cluster'}]}

    def _apply(self, path, obj):
        """Create ``obj`` in collection ``path``, or replace it."""
        try:
            return self.store.request('POST', path, body=obj)
        except apistatus.ApiError as exc:
            if exc.reason != 'AlreadyExists':
                raise
        item = '%s/%s' % (path, obj['metadata']['name'])
        current = self.store.request('GET', item)
        obj['metadata']['resourceVersion'] = \
            current['metadata']['resourceVersion']
        return self.store.request('PUT', item, body=obj)

    # -- readiness -----------------------------------------------------------

    def _wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT
        _wait(self._aggregated_api, deadline, 'APIService ' + APISERVICE)
        _wait(self._admission_in_force, deadline, 'the admission webhooks')

    def _aggregated_api(self):
        """``(ready, what the server says)`` of the APIService."""
        status = self.store.request('GET', '%s/%s' % (APISERVICES,
                                                      APISERVICE))
        available = [c for c in (status.get('status') or {}).get(
            'conditions') or () if c.get('type') == 'Available']
        if not available or available[0].get('status') != 'True':
            return False, available[0] if available else 'no conditions'
        try:
            self.store.request('GET', '/apis/' + webhooks.GROUP_VERSION)
        except apistatus.ApiError as exc:
            return False, exc.message
        return True, None

    def _admission_in_force(self):
        """A dry-run VM is defaulted and an invalid one refused."""
        path = self.store.path(virt.VM_RT, 'default')
        dry = [('dryRun', 'All')]
        vm = objects.make_vm(PROBE)
        domain = vm['spec']['template']['spec']['domain']
        del domain['firmware']['uuid']
        created = self.store.request('POST', path, dry, vm)
        if not created['spec']['template']['spec']['domain'][
                'firmware'].get('uuid'):
            return False, 'a dry-run VM was not defaulted'
        del vm['spec']['runStrategy']
        try:
            self.store.request('POST', path, dry, vm)
        except apistatus.ApiError as exc:
            return exc.code == 422, exc.message
        return False, 'a dry-run VM without a run strategy was accepted'


def _wait(predicate, deadline, what):
    """Poll ``predicate() -> (done, detail)`` until done or ``deadline``."""
    while True:
        done, detail = predicate()
        if done:
            return
        if time.monotonic() >= deadline:
            raise TimeoutError('%s not ready in %.0f s: %s'
                               % (what, READY_TIMEOUT, detail))
        time.sleep(0.2)
