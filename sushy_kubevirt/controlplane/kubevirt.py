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

"""KubeVirt's control plane, real: virt-api and virt-controller.

``KubeVirt(cp, workdir)`` installs on a ``server.ControlPlane`` what
KubeVirt's own virt-operator would (``virt-operator
--dump-install-strategy``: the CRDs, RBAC, webhook configurations,
APIServices, ConfigMaps; ``resource-generator``: the ``KubeVirt`` CRD),
localized (``manifests``), a ``KubeVirt`` CR, and the certificates
virt-operator would make (a ``kubevirt-ca`` and the serving ones). It then
runs virt-api and virt-controller as local processes, each with its
ServiceAccount's token, and waits until virt-api's APIService is
Available and its webhooks are in force.

virt-handler and virt-launcher are not here: they run on nodes, which the
simulator plays (``sushy_kubevirt.simulator.nodes``), writing as
``kubevirt-handler``, whose kubeconfig ``handler_kubeconfig`` writes.
"""

import base64
import gzip
import json
import os
import pathlib
import subprocess

import yaml

from sushy_kubevirt.controlplane import manifests
from sushy_kubevirt.controlplane import pki
from sushy_kubevirt.controlplane import server
from sushy_kubevirt.controlplane import upstream
from sushy_kubevirt import ports

NAMESPACE = 'kubevirt'
VERSION = upstream.KUBEVIRT.version
REGISTRY = 'quay.io/kubevirt'
LAUNCHER_IMAGE = '%s/virt-launcher:%s' % (REGISTRY, VERSION)
HANDLER = 'kubevirt-handler'
ACCOUNTS = {'virt-api': 'kubevirt-apiserver',
            'virt-controller': 'kubevirt-controller'}
SUBRESOURCES = 'subresources.kubevirt.io/v1'
READY_TIMEOUT = 120.0


class KubeVirt:
    """virt-api and virt-controller of ``cp``, installed and running."""

    def __init__(self, cp, workdir, binaries=None):
        self.cp = cp
        self.workdir = pathlib.Path(workdir)
        self.binaries = binaries
        self.processes = {}
        self.api_port = None
        #: where virt-api calls virt-handler (on every node's pod IP): a
        #: bound socket, held until the simulated virt-handler listens on it
        self.handler_socket = ports.reserved(manifests.HOST)
        self.handler_port = self.handler_socket.getsockname()[1]

    # -- the install -------------------------------------------------------

    def install_strategy(self):
        """virt-operator's manifests (dumped once per build, then cached)."""
        cache = self.binaries['virt-operator'].with_name(
            'install-strategy.yaml')
        if not cache.exists():
            self._dump(cache)
        docs = [d for d in yaml.safe_load_all(cache.read_text()) if d]
        kv_crd = subprocess.run(
            [str(self.binaries['resource-generator']), '--type=kv',
             '--namespace=' + NAMESPACE], check=True, text=True,
            stdout=subprocess.PIPE).stdout
        return docs + [d for d in yaml.safe_load_all(kv_crd) if d]

    def _dump(self, cache):
        self.workdir.mkdir(parents=True, exist_ok=True)
        kubeconfig = self.cp.write_kubeconfig(
            self.workdir / 'admin.kubeconfig')
        self.cp.ensure_namespace(NAMESPACE)
        env = dict(os.environ, VIRT_OPERATOR_IMAGE='%s/virt-operator:%s'
                   % (REGISTRY, VERSION), TARGET_DEPLOYMENT_CONFIG=json.dumps({
                       'id': 'sushy-kubevirt', 'namespace': NAMESPACE,
                       'registry': REGISTRY, 'kubeVirtVersion': VERSION,
                       'additionalProperties': {}}))
        subprocess.run([str(self.binaries['virt-operator']), '--kubeconfig',
                        str(kubeconfig), '--dump-install-strategy'],
                       env=env, check=True, capture_output=True)
        status, body = self.cp.request(
            'GET', '/api/v1/namespaces/%s/configmaps' % NAMESPACE)
        dumped = [c for c in body['items'] if c['metadata']['name']
                  .startswith('kubevirt-install-strategy-')]
        # The manifests are gzip'd and base64'd YAML.
        text = gzip.decompress(base64.b64decode(
            dumped[0]['data']['manifests'])).decode()
        tmp = cache.with_suffix('.tmp')
        tmp.write_text(text)
        os.replace(tmp, cache)

    def crds(self):
        return [d for d in self.install_strategy()
                if d['kind'] == 'CustomResourceDefinition']

    def start(self):
        """Install and launch virt-api and virt-controller.

        :meth:`wait_ready` awaits them.
        """
        self.binaries = self.binaries or upstream.ensure(upstream.KUBEVIRT)
        self.workdir.mkdir(parents=True, exist_ok=True)
        certs = self.workdir / 'pki'
        certs.mkdir(exist_ok=True)
        ca = pki.Authority(certs, 'kubevirt-ca', 'kubevirt.io')
        ca.issue('virt-api', 'virt-api', hosts=(
            manifests.HOST, 'localhost', 'virt-api.%s.svc' % NAMESPACE))
        ca.issue('virt-controller', 'virt-controller',
                 hosts=(manifests.HOST, 'localhost'))
        ca.issue('virt-handler-client', 'kubevirt.io:system:client:'
                 'virt-handler', client=True)
        ca.issue('virt-handler-server', 'kubevirt.io:system:node:'
                 'virt-handler', hosts=(manifests.HOST,))
        self.api_port = server.free_port()
        ca_pem = ca.path.read_bytes()
        objects = manifests.localize(
            self.install_strategy(),
            {(NAMESPACE, 'virt-api'): self.api_port}, ca_pem)
        objects = [self._filled(o, ca) for o in objects
                   if o['metadata']['name'] != 'kubevirt-ca']
        objects += self._ca_objects(certs, ca_pem)
        objects.append({
            'apiVersion': 'kubevirt.io/v1', 'kind': 'KubeVirt',
            'metadata': {'name': 'kubevirt', 'namespace': NAMESPACE},
            'spec': {'certificateRotateStrategy': {},
                     'configuration': {'developerConfiguration': {}},
                     'imagePullPolicy': 'IfNotPresent',
                     'workloadUpdateStrategy': {}}})
        manifests.apply(self.cp, objects)
        self._run('virt-api', [
            '--port', str(self.api_port), '--listen', manifests.HOST,
            '--console-server-port', str(self.handler_port),
            '--subresources-only',
            '--tls-cert-file', str(certs / 'virt-api.crt'),
            '--tls-key-file', str(certs / 'virt-api.key'),
            '--handler-cert-file', str(certs / 'virt-handler-client.crt'),
            '--handler-key-file', str(certs / 'virt-handler-client.key'),
            '-v', '2'])
        self._run('virt-controller', [
            '--launcher-image', LAUNCHER_IMAGE,
            '--exporter-image', '%s/virt-exportserver:%s'
            % (REGISTRY, VERSION),
            '--port', str(server.free_port()), '--listen', manifests.HOST,
            '-v', '2'])
        return self

    @staticmethod
    def _filled(obj, ca):
        """A TLS Secret with the certificate virt-operator would put in."""
        if obj['kind'] != 'Secret' or obj.get('data'):
            return obj
        name = obj['metadata']['name']
        path = ca.directory / (name + '.crt')
        if not path.exists():
            ca.issue(name, name, hosts=(manifests.HOST, 'localhost'))
        obj['data'] = {
            'tls.crt': base64.b64encode(path.read_bytes()).decode(),
            'tls.key': base64.b64encode(
                path.with_suffix('.key').read_bytes()).decode()}
        return obj

    def _ca_objects(self, certs, ca_pem):
        key = (certs / 'kubevirt-ca.key').read_bytes()
        return [
            {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'kubernetes.io/tls',
             'metadata': {'name': 'kubevirt-ca', 'namespace': NAMESPACE},
             'data': {'tls.crt': base64.b64encode(ca_pem).decode(),
                      'tls.key': base64.b64encode(key).decode()}},
            {'apiVersion': 'v1', 'kind': 'ConfigMap',
             'metadata': {'name': 'kubevirt-ca', 'namespace': NAMESPACE},
             'data': {'ca-bundle': ca_pem.decode()}}]

    def _run(self, name, args):
        kubeconfig = self.cp.service_account_kubeconfig(
            self.workdir / ('%s.kubeconfig' % name), NAMESPACE,
            ACCOUNTS[name])
        self.processes[name] = server.Process(
            name, [str(self.binaries[name]), '--kubeconfig', str(kubeconfig)]
            + args, self.workdir / ('%s.log' % name)).start()

    def handler_kubeconfig(self, path):
        """A kubeconfig of virt-handler's ServiceAccount."""
        return self.cp.service_account_kubeconfig(path, NAMESPACE, HANDLER)

    # -- readiness -----------------------------------------------------------

    def wait_ready(self, timeout=READY_TIMEOUT):
        """virt-api's subresource API answers and its webhooks default."""
        server.wait_ready(
            [self.processes['virt-api'], self.processes['virt-controller']],
            lambda: (self.cp.request('GET', '/apis/' + SUBRESOURCES)[0]
                     == 200 and self._defaulted()),
            timeout, poll=0.3)

    def _defaulted(self):
        """virt-api's mutating webhook gives a dry-run VM a firmware UUID."""
        vm = {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
              'metadata': {'name': 'sushy-kubevirt-probe',
                           'namespace': 'default'},
              'spec': {'runStrategy': 'Halted', 'template': {'spec': {
                  'domain': {'devices': {}}}}}}
        status, body = self.cp.request(
            'POST', '/apis/kubevirt.io/v1/namespaces/default/virtualmachines'
            '?dryRun=All', vm)
        return status == 201 and bool(
            body['spec']['template']['spec']['domain'].get('firmware', {})
            .get('uuid'))

    def stop(self):
        for name, proc in self.processes.items():
            # virt-api waits 5 s on SIGTERM for a load balancer to drop it
            # (pkg/virt-api/api.go); there is none here, and it keeps
            # nothing: killed at once.
            proc.stop(timeout=0 if name == 'virt-api' else 15.0)
        self.processes = {}
        self.handler_socket.close()
