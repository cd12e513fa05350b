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

"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and
kube-controller-manager, as the built binaries (``build``) run them.

``ControlPlane(workdir).start()`` generates the PKI (``pki``), starts etcd,
kube-apiserver (TLS with a generated CA, static token authentication,
the RBAC authorizer, the aggregation layer) and kube-controller-manager
(garbage collector, namespace and service-account controllers), waits
for ``/readyz`` and installs the KubeVirt and CDI CRDs (``crds``). Every
process dies with its parent (``PR_SET_PDEATHSIG``) and ``stop()`` ends
them all. Nodes, pods and guests are not here: the simulator's
controllers play them (``sushy_kubevirt.simulator.external``).
"""

import contextlib
import json
import pathlib
import secrets
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from sushy_kubevirt.controlplane import audit
from sushy_kubevirt.controlplane import build
from sushy_kubevirt.controlplane import crds
from sushy_kubevirt.controlplane import pki
from sushy_kubevirt import files
from sushy_kubevirt import ports
from sushy_kubevirt import tethered

HOST = '127.0.0.1'
SERVICE_CIDR = '10.0.0.0/24'
ADMIN_USER = 'sushy-kubevirt-admin'
#: The garbage collector, the namespace controller, ServiceAccounts, and
#: the PVC protection controller (admission gives every PVC its finalizer).
KCM_CONTROLLERS = ('garbagecollector,namespace,serviceaccount,'
                   'persistentvolumeclaim-protection-controller')
#: and the PV controller, which binds the claims of a provisioner
#: (``sushy_kubevirt.simulator.nodes.volumes``) to its volumes.
KCM_WITH_PV_BINDER = KCM_CONTROLLERS + (
    ',persistentvolume-binder-controller,'
    'persistentvolume-protection-controller')
START_TIMEOUT = 120.0


class ControlPlaneError(RuntimeError):
    """A component did not start; the message names its log."""


def free_port(host=HOST):
    return ports.restartable(host)


def wait_ready(processes, ready, timeout, poll=0.2):
    """Poll ``ready()`` until true while every process lives.

    A process that exits, or a timeout, raises with the log's tail (on
    timeout, the first process's).
    """
    deadline = time.monotonic() + timeout
    while True:
        for proc in processes:
            if not proc.alive():
                raise ControlPlaneError(
                    '%s exited (%s); its log %s ends:\n%s'
                    % (proc.name, proc.proc.returncode, proc.log_path,
                       proc.tail()))
        if ready():
            return
        if time.monotonic() > deadline:
            proc = processes[0]
            raise ControlPlaneError(
                '%s not ready in %.0f s; its log %s ends:\n%s'
                % (proc.name, timeout, proc.log_path, proc.tail()))
        time.sleep(poll)


class Process:
    """One component: its command line, log file and Popen."""

    def __init__(self, name, argv, log_path):
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.proc = None

    def start(self):
        """Start it; it gets SIGTERM when this process dies."""
        with open(self.log_path, 'ab') as log:
            try:
                self.proc = tethered.popen(
                    self.argv, stdout=log, stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL)
            except tethered.SpawnTimeout as exc:
                raise ControlPlaneError('%s: %s' % (self.name, exc))
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig=signal.SIGKILL):
        if self.alive():
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)

    def stop(self, timeout=15.0):
        if not self.alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def tail(self, lines=20):
        try:
            text = pathlib.Path(self.log_path).read_text(errors='replace')
        except OSError:
            return ''
        return '\n'.join(text.splitlines()[-lines:])


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager on loopback."""

    def __init__(self, workdir=None, *, crd_schemas=None, binaries=None,
                 port=None, apiserver_args=(), log=None, prepare=None,
                 controllers=KCM_CONTROLLERS):
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix='skv-cp-')
            workdir = self._tmp.name
        self.workdir = pathlib.Path(workdir)
        self.crd_schemas = crd_schemas
        self.binaries = binaries
        self.apiserver_args = list(apiserver_args)
        self.log = log
        #: ``prepare(self)`` installs CRDs before the garbage collector
        #: starts (instead of those of ``crd_schemas``)
        self.prepare = prepare
        #: kube-controller-manager's --controllers
        self.controllers = controllers
        self.admin_token = secrets.token_urlsafe(32)
        self.port = port
        self.etcd_port = None
        self.processes = {}

    # -- addresses ---------------------------------------------------------

    @property
    def url(self):
        return 'https://%s:%d' % (HOST, self.port)

    @property
    def etcd_url(self):
        return 'http://%s:%d' % (HOST, self.etcd_port)

    @property
    def pki(self):
        return self.workdir / 'pki'

    @property
    def audit_path(self):
        """kube-apiserver's audit log (``audit.AuditLog`` reads it)."""
        return self.workdir / 'audit.log'

    @property
    def ca_file(self):
        return self.pki / 'ca.crt'

    # -- lifecycle ---------------------------------------------------------

    def start(self):
        self.binaries = self.binaries or build.ensure(log=self.log)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._make_pki()
        self.etcd_port = free_port()
        # Restarted on its port (restart_api): below the ephemeral range.
        self.port = self.port or ports.restartable(HOST)
        try:
            self._start_etcd()
            self._start_apiserver()
            self.wait_ready()
            # The CRDs first: the garbage collector maps owners' kinds at
            # start (a kind it cannot map waits for its 30 s resync).
            if self.prepare is not None:
                self.prepare(self)
            elif self.crd_schemas:
                self.install_crds(crds.load(self.crd_schemas))
            self._start_controller_manager()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        for name in ('kube-controller-manager', 'kube-apiserver', 'etcd'):
            proc = self.processes.get(name)
            if proc is not None:
                proc.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _make_pki(self):
        self.pki.mkdir(parents=True, exist_ok=True)
        ca = pki.Authority(self.pki, 'ca', 'sushy-kubevirt-ca')
        ca.issue('apiserver', 'kube-apiserver', hosts=(
            HOST, 'localhost', 'kubernetes', 'kubernetes.default',
            'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local',
            '10.0.0.1'))
        ca.issue('kube-controller-manager', 'system:kube-controller-manager',
                 client=True)
        front = pki.Authority(self.pki, 'front-proxy-ca',
                              'sushy-kubevirt-front-proxy-ca')
        front.issue('front-proxy-client', 'front-proxy-client', client=True)
        self.authority = ca
        pki.service_account_key(self.pki)
        files.replace(self.pki / 'tokens.csv', '%s,%s,%s,system:masters\n'
                      % (self.admin_token, ADMIN_USER, ADMIN_USER), 0o600)

    def _spawn(self, name, argv):
        proc = Process(name, argv, self.workdir / (name + '.log')).start()
        self.processes[name] = proc
        return proc

    def _start_etcd(self):
        data = self.workdir / 'etcd'
        self._spawn('etcd', [
            str(self.binaries['etcd']), '--name', 'sushy-kubevirt',
            '--data-dir', str(data),
            '--listen-client-urls', self.etcd_url,
            '--advertise-client-urls', self.etcd_url,
            '--listen-peer-urls', 'http://%s:%d' % (HOST, free_port()),
            '--log-level', 'warn', '--quota-backend-bytes', str(8 << 30),
            '--unsafe-no-fsync'])
        self._wait('etcd', lambda: self._etcd_healthy())

    def _etcd_healthy(self):
        with contextlib.suppress(OSError, ValueError):
            with urllib.request.urlopen(self.etcd_url + '/health',
                                        timeout=2) as resp:
                return json.load(resp).get('health') == 'true'
        return False

    def apiserver_argv(self):
        p = self.pki
        return [
            str(self.binaries['kube-apiserver']),
            '--etcd-servers', self.etcd_url,
            '--bind-address', HOST, '--secure-port', str(self.port),
            '--advertise-address', HOST,
            '--endpoint-reconciler-type', 'none',
            '--tls-cert-file', str(p / 'apiserver.crt'),
            '--tls-private-key-file', str(p / 'apiserver.key'),
            '--client-ca-file', str(p / 'ca.crt'),
            '--token-auth-file', str(p / 'tokens.csv'),
            '--authorization-mode', 'RBAC',
            '--service-account-issuer',
            'https://kubernetes.default.svc.cluster.local',
            '--service-account-key-file', str(p / 'sa.pub'),
            '--service-account-signing-key-file', str(p / 'sa.key'),
            '--service-cluster-ip-range', SERVICE_CIDR,
            '--requestheader-client-ca-file', str(p / 'front-proxy-ca.crt'),
            '--requestheader-allowed-names', 'front-proxy-client',
            '--requestheader-username-headers', 'X-Remote-User',
            '--requestheader-group-headers', 'X-Remote-Group',
            '--requestheader-extra-headers-prefix', 'X-Remote-Extra-',
            '--proxy-client-cert-file', str(p / 'front-proxy-client.crt'),
            '--proxy-client-key-file', str(p / 'front-proxy-client.key'),
            '--audit-policy-file', str(audit.write_policy(
                self.workdir / 'audit-policy.json')),
            '--audit-log-path', str(self.audit_path),
            '--profiling=false', '--v=1',
        ] + list(audit.FLAGS) + self.apiserver_args

    def _start_apiserver(self):
        self._spawn('kube-apiserver', self.apiserver_argv())

    def kill_apiserver(self, sig=signal.SIGKILL):
        """Kill kube-apiserver (``kill -9``) and wait until it is gone."""
        self.processes['kube-apiserver'].kill(sig)

    def start_apiserver(self, delay=0.0):
        """Start kube-apiserver again on its port; wait until it is ready.

        It starts ``delay`` seconds from now: an outage that long.
        """
        time.sleep(delay)
        self._start_apiserver()
        self.wait_ready()

    def _start_controller_manager(self):
        kubeconfig = self.write_kubeconfig(
            self.workdir / 'kube-controller-manager.kubeconfig',
            client_cert=(self.pki / 'kube-controller-manager.crt',
                         self.pki / 'kube-controller-manager.key'))
        self._spawn('kube-controller-manager', [
            str(self.binaries['kube-controller-manager']),
            '--kubeconfig', str(kubeconfig),
            '--controllers', self.controllers,
            '--service-account-private-key-file', str(self.pki / 'sa.key'),
            '--root-ca-file', str(self.ca_file),
            # Each controller as its own ServiceAccount, as clusters run
            # it: only the garbage collector's may read custom resources.
            '--use-service-account-credentials',
            '--leader-elect=false', '--secure-port', '0',
            '--use-service-account-credentials',
            '--concurrent-gc-syncs', '5', '--v=1'])

    # -- readiness ---------------------------------------------------------

    def _wait(self, name, ready, timeout=START_TIMEOUT):
        wait_ready([self.processes[name]], ready, timeout)

    def ssl_context(self):
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(self, method, path, body=None, token=None, timeout=10.0,
                content_type='application/json'):
        """One HTTPS call as admin (or ``token``): (status, decoded body)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data,
                                     method=method)
        req.add_header('Authorization', 'Bearer %s'
                       % (token or self.admin_token))
        if data is not None:
            req.add_header('Content-Type', content_type)
        try:
            with urllib.request.urlopen(req, timeout=timeout,
                                        context=self.ssl_context()) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors='replace')

    def _readyz(self):
        with contextlib.suppress(OSError):
            return self.request('GET', '/readyz', timeout=3)[0] == 200
        return False

    def wait_ready(self, timeout=START_TIMEOUT):
        self._wait('kube-apiserver', self._readyz, timeout)

    # -- content -----------------------------------------------------------

    def apply(self, path, obj):
        """Create ``obj`` at collection ``path``, or replace it."""
        status, body = self.request('POST', path, obj)
        if status == 409:
            name = obj['metadata']['name']
            current = self.request('GET', '%s/%s' % (path, name))[1]
            obj = dict(obj, metadata=dict(
                obj['metadata'],
                resourceVersion=current['metadata']['resourceVersion']))
            status, body = self.request('PUT', '%s/%s' % (path, name), obj)
        if status >= 300:
            raise ControlPlaneError('%s %s: %s %s' % (
                path, obj['metadata'].get('name'), status, body))
        return body

    def install_crds(self, definitions, timeout=60.0):
        path = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'
        for crd in definitions:
            self.apply(path, crd)
        deadline = time.monotonic() + timeout
        for crd in definitions:
            name = crd['metadata']['name']
            while True:
                status, body = self.request('GET', '%s/%s' % (path, name))
                conditions = {c['type']: c['status'] for c in
                              (body.get('status') or {}).get('conditions')
                              or ()} if status == 200 else {}
                if conditions.get('Established') == 'True':
                    break
                if time.monotonic() > deadline:
                    raise ControlPlaneError('CRD %s not established: %s'
                                            % (name, conditions))
                time.sleep(0.1)
        self._wait_discovery([c['spec']['group'] + '/' +
                              c['spec']['versions'][0]['name']
                              for c in definitions], timeout)

    def _wait_discovery(self, group_versions, timeout):
        deadline = time.monotonic() + timeout
        for gv in group_versions:
            while self.request('GET', '/apis/' + gv)[0] != 200:
                if time.monotonic() > deadline:
                    raise ControlPlaneError('%s not discoverable' % gv)
                time.sleep(0.1)

    def ensure_namespace(self, name):
        return self.apply('/api/v1/namespaces', {
            'apiVersion': 'v1', 'kind': 'Namespace',
            'metadata': {'name': name}})

    def service_account_token(self, namespace, name, seconds=86400):
        """Create the ServiceAccount if needed; return a bound token."""
        self.apply('/api/v1/namespaces/%s/serviceaccounts' % namespace, {
            'apiVersion': 'v1', 'kind': 'ServiceAccount',
            'metadata': {'name': name, 'namespace': namespace}})
        status, body = self.request(
            'POST', '/api/v1/namespaces/%s/serviceaccounts/%s/token'
            % (namespace, name), {
                'apiVersion': 'authentication.k8s.io/v1',
                'kind': 'TokenRequest',
                'spec': {'expirationSeconds': seconds}})
        if status != 201:
            raise ControlPlaneError('TokenRequest %s/%s: %s %s'
                                    % (namespace, name, status, body))
        return body['status']['token']

    def compact_etcd(self):
        """Compact etcd at its current revision; return the revision."""
        def call(path, body):
            req = urllib.request.Request(
                self.etcd_url + path, data=json.dumps(body).encode(),
                method='POST', headers={'Content-Type': 'application/json'})
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.load(resp)
        header = call('/v3/kv/range', {'key': 'AA=='})['header']
        revision = int(header['revision'])
        call('/v3/kv/compaction', {'revision': revision, 'physical': True})
        return revision

    def service_account_kubeconfig(self, path, namespace, name):
        """A kubeconfig that acts as ServiceAccount ``namespace/name``."""
        return self.write_kubeconfig(
            path, token=self.service_account_token(namespace, name),
            namespace=namespace, user=name)

    def write_kubeconfig(self, path, *, token=None, namespace='default',
                         client_cert=None, user='admin'):
        """A kubeconfig for this server (admin token unless told)."""
        if client_cert is not None:
            cred = ('    client-certificate: %s\n    client-key: %s\n'
                    % tuple(client_cert))
        else:
            cred = '    token: %s\n' % (token or self.admin_token)
        text = (
            'apiVersion: v1\nkind: Config\nclusters:\n'
            '- name: sushy-kubevirt\n  cluster:\n'
            '    server: %s\n    certificate-authority: %s\n'
            'users:\n- name: %s\n  user:\n%s'
            'contexts:\n- name: sushy-kubevirt\n  context:\n'
            '    cluster: sushy-kubevirt\n    user: %s\n'
            '    namespace: %s\n'
            'current-context: sushy-kubevirt\npreferences: {}\n'
            % (self.url, self.ca_file, user, cred, user, namespace))
        return files.replace(path, text, 0o600)
