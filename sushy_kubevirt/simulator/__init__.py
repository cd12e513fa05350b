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

"""A kube-apiserver + KubeVirt + CDI simulator on 127.0.0.1.

``Simulator`` owns the store, the API server (HTTPS with a CA of its
own, ``certificates``; plain HTTP with ``tls=False``), fault injection, the
request log, the authorizer (and the RBAC objects and reviews of
``rbac`` and ``reviews``), the CRD schemas (``schemas``) and the fault
control API (``control``); ``virt``, ``cdi`` and ``objects`` install
controllers and subresources and seed objects.
"""

import logging
import os
import threading

from sushy_kubevirt.simulator import apiserver
from sushy_kubevirt.simulator import auth
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import certificates
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import control
from sushy_kubevirt.simulator import controllermanager
from sushy_kubevirt.simulator import faults
from sushy_kubevirt.simulator import kubeconfig
from sushy_kubevirt.simulator import namespaces
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import rbac
from sushy_kubevirt.simulator import requestlog
from sushy_kubevirt.simulator import reviews
from sushy_kubevirt.simulator import schemas
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator import virt

ResourceType = storage.ResourceType

NAMESPACES = ResourceType('', 'v1', 'namespaces', 'Namespace',
                          namespaced=False, short_names=('ns',),
                          custom=False)
SECRETS = ResourceType('', 'v1', 'secrets', 'Secret',
                       status_subresource=False, custom=False)
CONFIGMAPS = ResourceType('', 'v1', 'configmaps', 'ConfigMap',
                          status_subresource=False, short_names=('cm',),
                          custom=False)
PVCS = ResourceType('', 'v1', 'persistentvolumeclaims',
                    'PersistentVolumeClaim', short_names=('pvc',),
                    custom=False)
PVS = ResourceType('', 'v1', 'persistentvolumes', 'PersistentVolume',
                   namespaced=False, short_names=('pv',), custom=False)
EVENTS = ResourceType('', 'v1', 'events', 'Event',
                      status_subresource=False, short_names=('ev',),
                      custom=False)
STORAGECLASSES = ResourceType('storage.k8s.io', 'v1', 'storageclasses',
                              'StorageClass', namespaced=False,
                              status_subresource=False, short_names=('sc',),
                              custom=False)
LEASES = ResourceType('coordination.k8s.io', 'v1', 'leases', 'Lease',
                      status_subresource=False, custom=False)
CORE_RESOURCES = (NAMESPACES, SECRETS, CONFIGMAPS, PVCS, PVS, EVENTS,
                  STORAGECLASSES, LEASES) + rbac.RESOURCES + reviews.RESOURCES
ADMIN_TOKEN = 'sushy-kubevirt-admin'
LOG = logging.getLogger(__name__)


class Simulator:
    """A simulated cluster serving the Kubernetes API over HTTPS.

    ``tls=False`` serves plain HTTP instead.
    """

    def __init__(self, *, host='127.0.0.1', port=0, vms=0, namespaces=1,
                 time_scale=1.0, stage_delays=None, latency_ms=0,
                 max_qps=None, max_inflight=None, history_size=10_000,
                 bookmark_interval=60.0, min_request_timeout=1800.0,
                 token=ADMIN_TOKEN, seed=None, start_rv=1_000_000,
                 too_large_wait=3.0, watchlist_enabled=True,
                 watch_backlog_limit=None, install=True, guest_agent=False,
                 crd_schemas=None, field_validation=None, tls=True,
                 pvc_roots=False):
        self.host = host
        # The CA and serving certificate (None: plain HTTP).
        self.certificates = certificates.Certificates(host) if tls else None
        # Default for VMIs without the guest-agent template annotation.
        self.guest_agent = guest_agent
        self.vms = vms
        self.namespaces = namespaces
        #: Seed root disks as PVC volumes (no DataVolumes).
        self.pvc_roots = pvc_roots
        self.time_scale = time_scale
        self.stage_delays = dict(stage_delays or {})
        self.bookmark_interval = bookmark_interval
        self.min_request_timeout = min_request_timeout
        self.too_large_wait = too_large_wait
        self.watchlist_enabled = watchlist_enabled
        self.token = token
        self.seed = seed
        self.install = install
        # CRD schema directory; None: $SUSHY_KUBEVIRT_SIMULATOR_CRD_SCHEMAS,
        # which is skipped (with a warning) when it names no directory, so
        # that a test run can set it unconditionally.
        self.crd_schemas = crd_schemas or _env_schema_dir()
        self.schemas = (schemas.load_dir(self.crd_schemas)
                        if self.crd_schemas else {})
        # fieldValidation of requests that send none (kube: Warn).
        self.field_validation = field_validation or schemas.DEFAULT_DIRECTIVE
        if self.field_validation not in schemas.DIRECTIVES:
            raise ValueError('field_validation must be one of %s'
                             % ', '.join(schemas.DIRECTIVES))
        self.store = storage.Store(start_rv=start_rv,
                                   history_size=history_size,
                                   watch_backlog_limit=watch_backlog_limit)
        self.faults = faults.Faults(latency_ms=latency_ms, max_qps=max_qps,
                                    max_inflight=max_inflight)
        self.request_log = requestlog.RequestLog()
        self.authz = auth.Authorizer(token)
        self.admission = {}
        self.validation = {}
        self.subresources = {}
        self.components = {}
        #: Users whose API writes count as KubeVirt's (beside its service
        #: accounts); the simulated KubeVirt writes to the store directly.
        self.kubevirt_users = frozenset()
        self._api = apiserver.ApiServer(
            self, host, port, self.certificates
            and self.certificates.server_context)
        self._lock = threading.Lock()
        self._started = False
        self._reopen = None
        self.control = None
        for rt in CORE_RESOURCES:
            self.store.register(rt)

    # -- extension points ---------------------------------------------------

    def register(self, rt):
        """Serve another resource type."""
        self.store.register(rt)

    def register_admission(self, rt, fn, validating=False):
        """``fn(operation, new, old, user)`` on API CREATE/UPDATE.

        Mutating functions run before the schema check, validating ones
        after it (kube-apiserver's order).
        """
        hooks = self.validation if validating else self.admission
        hooks.setdefault(rt.key, []).append(fn)

    def register_subresource(self, group_version, plural, action, fn):
        """Serve PUT .../namespaces/{ns}/{plural}/{name}/{action}."""
        self.subresources[(group_version, plural, action)] = fn

    # -- lifecycle ----------------------------------------------------------

    @property
    def port(self):
        return self._api.port

    @property
    def url(self):
        return '%s://%s:%d' % ('https' if self.certificates else 'http',
                               self.host, self._api.port)

    @property
    def ca_file(self):
        """The CA certificate file to verify the server with, or None."""
        return self.certificates and self.certificates.ca_file

    def start(self):
        """Bind, serve, install KubeVirt/CDI and seed objects."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        self._api.start()
        self.components['kube-controller-manager'] = \
            controllermanager.ControllerManager(self).start(self.store)
        if self.install:
            self._install()
        if self.store.try_get(NAMESPACES, None, 'default') is None:
            default = {'metadata': {'name': 'default'}}
            namespaces.prepare(default, None)
            self.store.create(NAMESPACES, default)
        return self

    def _install(self):
        self.components['kubevirt'] = virt.install(self)
        self.components['cdi'] = cdi.install(self, owner_gc=False)
        self._set_schemas()
        objects.seed(self, self.vms, self.namespaces, self.pvc_roots)

    def _set_schemas(self):
        """Validate the served custom resources that have a schema."""
        if not self.schemas:
            LOG.info('no CRD schema directory (--crd-schemas or $%s): '
                     'custom resources are neither validated nor pruned',
                     schemas.ENV)
            return
        for rt in self.store.resources():
            schema = self.schemas.get('%s.%s' % (rt.plural, rt.group))
            if schema is not None and schema.version == rt.version:
                self.store.set_schema(rt, schema)
        LOG.info('validating and pruning %s against the CRD schemas in %s',
                 ', '.join(sorted(self.schemas)), self.crd_schemas)

    def start_control(self, port=0):
        """Serve the fault control API (``control``); return its URL."""
        if self.control is None:
            self.control = control.ControlServer(self, self.host,
                                                 port).start()
        return self.control.url

    def stop(self):
        """Close every watch and socket and stop controllers."""
        with self._lock:
            if not self._started:
                return
            self._started = False
            reopen, self._reopen = self._reopen, None
        if self.control is not None:
            self.control.stop()
            self.control = None
        if reopen is not None:
            reopen.cancel()
        for component in self.components.values():
            component.stop()
        self.components = {}
        self._api.stop()

    def restart_api(self, down_seconds=0.0):
        """Restart the API server: cut every connection and watch.

        Connections are refused for ``down_seconds``, then the server
        listens again on the same port. Returns a ``threading.Event``
        set once the server listens again.
        """
        back = threading.Event()
        self._api.stop()
        if down_seconds <= 0:
            self._api.start()
            back.set()
            return back

        def reopen():
            with self._lock:
                if not self._started:
                    return
                self._reopen = None
            self._api.start()
            back.set()
        timer = threading.Timer(down_seconds, reopen)
        timer.daemon = True
        self._reopen = timer
        timer.start()
        return back

    def write_kubeconfig(self, path, *, user_token=None,
                         namespace='default'):
        """Write a kubeconfig for this simulator; return its path."""
        return kubeconfig.write(
            path, self.url, user_token or self.token, namespace,
            ca_pem=self.certificates and self.certificates.ca_pem)

    def wait_for(self, predicate, timeout=10.0, interval=0.02):
        """Poll ``predicate()`` until true; return its value or raise."""
        return clock.wait_for(predicate, timeout, interval)

    def guest_ends(self, namespace, name, phase='Succeeded'):
        """The guest of VMI ``name`` powers off or crashes (``Failed``)."""
        virt.guest_ends(self.store, namespace, name, phase)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _env_schema_dir():
    path = os.environ.get(schemas.ENV)
    if path and not os.path.isdir(path):
        LOG.warning('$%s=%s is not a directory: custom resources are not '
                    'validated', schemas.ENV, path)
        return None
    return path or None
