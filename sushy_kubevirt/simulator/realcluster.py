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

"""A real control plane with the simulator's KubeVirt and CDI: KWOK-style.

``RealCluster(vms=..., namespaces=...)`` starts
``sushy_kubevirt.controlplane.server.ControlPlane`` (etcd, kube-apiserver,
kube-controller-manager, the KubeVirt and CDI CRDs) and
``external.External`` (the simulated virt-controller, virt-handler, CDI
importer and virt-api as an aggregated APIService and webhooks), with the
``Simulator``'s knobs and names where they apply: ``store`` (the external
controllers' view), ``url``, ``write_kubeconfig``, ``request_log`` (the
emulator's requests, from kube-apiserver's audit log), ``restart_api``
(``kill -9`` of kube-apiserver and a restart), ``wait_for``.
"""

import os
import pathlib
import tempfile
import threading

from sushy_kubevirt.controlplane import cdi as cpcdi
from sushy_kubevirt.controlplane import kubevirt as cpkubevirt
from sushy_kubevirt.controlplane import rbac
from sushy_kubevirt.controlplane import server
from sushy_kubevirt.controlplane import upstream
from sushy_kubevirt.simulator import auditlog
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import external
from sushy_kubevirt.simulator import nodes
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import remote
from sushy_kubevirt.simulator import schemas
from sushy_kubevirt.simulator import virt

EMULATOR_USER = rbac.EMULATOR_USER
#: Seconds the seeded VMs' root disks may take to import: at least, and
#: per VM (CDI imports them a few at a time; 1,000 on a busy 2-core host
#: took more than 300 s).
SEED_TIMEOUT, SEED_S_PER_VM = 300.0, 1.0


class RealCluster:
    """etcd + kube-apiserver + kube-controller-manager + simulated KubeVirt.

    :param roles_in: namespaces that get the shipped namespaced Role too
        (the ClusterRole is bound cluster-wide): the EventService's Lease
        and the sessions' Secrets live there.
    """

    def __init__(self, *, vms=0, namespaces=1, time_scale=1.0,
                 stage_delays=None, guest_agent=False, crd_schemas=None,
                 workdir=None, port=None, roles_in=('default',),
                 apiserver_args=(), kubevirt=False, pvc_roots=False):
        self.vms = vms
        self.pvc_roots = pvc_roots
        self.namespaces = namespaces
        self.time_scale = time_scale
        self.stage_delays = stage_delays
        self.guest_agent = guest_agent
        self.crd_schemas = crd_schemas or os.environ.get(schemas.ENV)
        self.roles_in = tuple(roles_in)
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix='skv-real-')
            workdir = self._tmp.name
        self.workdir = pathlib.Path(workdir)
        self.control_plane = server.ControlPlane(
            self.workdir / 'control-plane', crd_schemas=self.crd_schemas,
            port=port, apiserver_args=apiserver_args)
        #: the real KubeVirt (``controlplane.kubevirt``) and its simulated
        #: nodes, or None: KubeVirt simulated too
        self.kubevirt = self.nodes = None
        self.cdi = None
        if kubevirt:
            self.kubevirt = cpkubevirt.KubeVirt(
                self.control_plane, self.workdir / 'kubevirt')
            self.cdi = cpcdi.CDI(self.control_plane, self.workdir / 'cdi')
            self.control_plane.prepare = self._install_crds
            self.control_plane.controllers = server.KCM_WITH_PV_BINDER
        self.external = None
        self.store = None
        self.request_log = auditlog.AuditLog(self.control_plane.audit_path,
                                             users=[EMULATOR_USER])

    @property
    def url(self):
        return self.control_plane.url

    @property
    def port(self):
        return self.control_plane.port

    @property
    def token(self):
        return self.control_plane.admin_token

    @property
    def admin_kubeconfig(self):
        return self.workdir / 'admin.kubeconfig'

    def _install_crds(self, cp):
        self.kubevirt.binaries = upstream.ensure(upstream.KUBEVIRT)
        self.cdi.binaries = upstream.ensure(upstream.CDI)
        cp.install_crds(self.kubevirt.crds() + cpcdi.crds(self.cdi.binaries))

    def start(self):
        if self.kubevirt is None and (
                not self.crd_schemas or not os.path.isdir(self.crd_schemas)):
            raise ValueError(
                'a real control plane needs the CRD schema directory '
                '(--crd-schemas or $%s), got %r'
                % (schemas.ENV, self.crd_schemas))
        cp = self.control_plane.start()
        try:
            cp.write_kubeconfig(self.admin_kubeconfig)
            if self.kubevirt is not None:
                self._start_kubevirt(cp)
                return self
            cert, key = cp.authority.issue('virt-api', 'virt-api',
                                           hosts=external.SERVING_HOSTS)
            self.external = external.External(
                self.admin_kubeconfig, webhook_cert=cert, webhook_key=key,
                client_ca=cp.pki / 'front-proxy-ca.crt',
                ca_bundle=cp.ca_file, time_scale=self.time_scale,
                stage_delays=self.stage_delays,
                guest_agent=self.guest_agent, vms=self.vms,
                namespaces=self.namespaces, writer=server.ADMIN_USER).start()
            self.store = self.external.store
        except BaseException:
            self.stop()
            raise
        return self

    def _start_kubevirt(self, cp):
        """The real KubeVirt and CDI, the simulated nodes, the VMs."""
        # Both launched before either is awaited: they start side by side.
        self.kubevirt.start()
        self.cdi.start()
        self.kubevirt.wait_ready()
        self.cdi.wait_ready()
        self.nodes = nodes.Nodes(
            cp, self.kubevirt, self.workdir, time_scale=self.time_scale,
            stage_delays=self.stage_delays,
            guest_agent=self.guest_agent).start()
        self.store = remote.RemoteStore(self.admin_kubeconfig)
        for rt in external.WATCHED:
            self.store.register(rt)
        self.store.wait_synced(external.READY_TIMEOUT)
        self._seed()

    def _seed(self, timeout=None):
        """``vms`` Halted VMs, made as a user makes them, imported."""
        timeout = timeout or max(SEED_TIMEOUT, SEED_S_PER_VM * self.vms)
        names = objects.namespace_names(self.namespaces)
        ns_rt = self.store.resource('', 'namespaces')
        for ns in names:
            if self.store.try_get(ns_rt, None, ns) is None:
                self.store.create(ns_rt, {'apiVersion': 'v1',
                                          'kind': 'Namespace',
                                          'metadata': {'name': ns}})
        roots = []
        pvc_rt = self.store.resource('', 'persistentvolumeclaims')
        for i in range(self.vms):
            ns, name = names[i % len(names)], 'vm-%05d' % i
            if self.pvc_roots:
                self.store.create(pvc_rt, objects.make_pvc('%s-root' % name,
                                                           ns))
            vm = objects.make_vm(name, ns, labels={'redfish-enabled': 'true'},
                                 claim=self.pvc_roots)
            self.store.create(virt.VM_RT, vm)
            roots += [(ns, t['metadata']['name'])
                      for t in vm['spec'].get('dataVolumeTemplates', ())]
        self.wait_for(lambda: all(
            (self.store.try_get(cdi.DV_RT, ns, name) or {}).get(
                'status', {}).get('phase') == 'Succeeded'
            for ns, name in roots), timeout=timeout)

    def stop(self):
        if self.external is not None:
            self.external.stop()
            self.external = None
        if self.nodes is not None:
            self.nodes.stop()
            self.nodes = None
        if self.store is not None and self.kubevirt is not None:
            self.store.stop()
        for component in (self.cdi, self.kubevirt):
            if component is not None:
                component.stop()
        self.control_plane.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def write_kubeconfig(self, path, *, namespace='default'):
        """A kubeconfig of the emulator's ServiceAccount; its path.

        The account is bound to the shipped ClusterRole and, in
        ``roles_in``, to the shipped Role.
        """
        return rbac.emulator_kubeconfig(
            self.control_plane, path, namespaces=self.roles_in,
            cluster=True, default_namespace=namespace)

    def write_admin_kubeconfig(self, path):
        return self.control_plane.write_kubeconfig(path)

    def restart_api(self, down_seconds=0.0):
        """``kill -9`` kube-apiserver; start it again after ``down_seconds``.

        As ``Simulator.restart_api``: returns at once, with a
        ``threading.Event`` set once the server is ready again.
        """
        back = threading.Event()
        self.control_plane.kill_apiserver()

        def restart():
            self.control_plane.start_apiserver(delay=down_seconds)
            back.set()
        threading.Thread(target=restart, daemon=True,
                         name='restart kube-apiserver').start()
        return back

    def compact(self):
        """Compact etcd at its current revision; return the revision."""
        return self.control_plane.compact_etcd()

    def wait_for(self, predicate, timeout=10.0, interval=0.02):
        """Poll ``predicate()`` until true; return its value or raise."""
        return clock.wait_for(predicate, timeout, interval)

    def guest_ends(self, namespace, name, phase='Succeeded'):
        """The guest of VMI ``name`` powers off or crashes (``Failed``).

        The node's virt-handler reports the phase. Only KubeVirt's service
        accounts may change a VMI's status (virt-api's mutating webhook
        drops anyone else's change), so with the real KubeVirt the
        simulated node writes it.
        """
        if self.nodes is not None:
            self.nodes.handler.guest_ends(namespace, name, phase)
        else:
            virt.guest_ends(self.store, namespace, name, phase)


class ControlTarget:
    """The fault control API's (``control``) view of a real cluster.

    It can restart kube-apiserver and compact etcd; fault rules and
    forbidden namespaces answer 501.
    """

    def __init__(self, cluster):
        self.cluster = cluster
        self.token = cluster.token
        self.store = self
        self.compacted_resource_version = None

    def restart_api(self, down_seconds):
        self.cluster.restart_api(down_seconds)

    def compact(self):
        self.compacted_resource_version = self.cluster.compact()
