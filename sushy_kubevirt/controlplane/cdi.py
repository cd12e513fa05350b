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

"""CDI's control plane, real: cdi-controller and cdi-apiserver.

``manifests()`` runs ``cdi-manifests`` (``upstream``): CDI operator's own
resource factories print every object it would install in the ``cdi``
namespace, CRDs included. ``CDI(cp, workdir).start()`` applies them,
localized (``manifests``), with a ``CDI`` CR and the certificates the
operator would make, and runs cdi-apiserver (its webhooks and upload
API) and cdi-controller, each in a pod network of its own (``podnet``:
both listen on ``:8443``) with its ServiceAccount's token.

Importer pods and volumes are not here: the simulated nodes
(``sushy_kubevirt.simulator.nodes``) run them.
"""

import base64
import json
import pathlib
import subprocess

from sushy_kubevirt.controlplane import manifests as localizing
from sushy_kubevirt.controlplane import pki
from sushy_kubevirt.controlplane import podnet
from sushy_kubevirt.controlplane import server
from sushy_kubevirt.controlplane import upstream

NAMESPACE = 'cdi'
VERSION = upstream.CDI.version
REGISTRY = 'quay.io/kubevirt'
PORT = 8443                  # both components', fixed in their code
#: where cdi-controller reads cdi-apiserver's signing keys (fixed in code)
TOKEN_KEYS = '/var/run/cdi/token/keys'
ACCOUNTS = {'cdi-apiserver': 'cdi-apiserver', 'cdi-controller': 'cdi-sa'}
READY_TIMEOUT = 120.0


def manifests(binaries):
    out = subprocess.run([str(binaries['cdi-manifests']), NAMESPACE,
                          VERSION], check=True, text=True,
                         stdout=subprocess.PIPE).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def crds(binaries):
    return [o for o in manifests(binaries)
            if o['kind'] == 'CustomResourceDefinition']


def _image(name):
    return '%s/%s:%s' % (REGISTRY, name, VERSION)


class CDI:
    """cdi-apiserver and cdi-controller of ``cp``, installed and running."""

    def __init__(self, cp, workdir, binaries=None):
        self.cp = cp
        self.workdir = pathlib.Path(workdir)
        self.binaries = binaries
        self.processes = {}
        self.networks = {}

    def start(self):
        """Install and launch cdi-apiserver and cdi-controller.

        :meth:`wait_ready` awaits them.
        """
        self.binaries = self.binaries or upstream.ensure(upstream.CDI)
        self.workdir.mkdir(parents=True, exist_ok=True)
        certs = self.workdir / 'pki'
        certs.mkdir(exist_ok=True)
        ca = pki.Authority(certs, 'cdi-ca', 'cdi.kubevirt.io')
        ca.issue('cdi-apiserver', 'cdi-api', hosts=(
            localizing.HOST, 'cdi-api.%s.svc' % NAMESPACE))
        for stem in ('uploadserver-signer', 'uploadserver-client-signer'):
            ca.issue(stem, stem, client=True)
        api_net = self._network('cdi-apiserver', inbound=(PORT,))
        objects = localizing.localize(
            manifests(self.binaries),
            {(NAMESPACE, 'cdi-api'): api_net.ports[PORT]},
            ca.path.read_bytes())
        objects.append({
            'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'CDI',
            'metadata': {'name': 'cdi'},
            'spec': {'imagePullPolicy': 'IfNotPresent',
                     'workload': {}, 'infra': {}, 'config': {}}})
        localizing.apply(self.cp, [o for o in objects if o['kind'] !=
                                   'CustomResourceDefinition'])
        self._run('cdi-apiserver', [], {
            'CERT_FILE': certs / 'cdi-apiserver.crt',
            'KEY_FILE': certs / 'cdi-apiserver.key'})
        self._network('cdi-controller', mounts={
            TOKEN_KEYS: self._signing_keys()})
        self._run('cdi-controller', [], {
            'IMPORTER_IMAGE': _image('cdi-importer'),
            'CLONER_IMAGE': _image('cdi-cloner'),
            'UPLOADSERVER_IMAGE': _image('cdi-uploadserver'),
            'OVIRT_POPULATOR_IMAGE': _image('cdi-ovirt-populator'),
            'UPLOADPROXY_SERVICE': 'cdi-uploadproxy',
            'PULL_POLICY': 'IfNotPresent',
            'UPLOAD_SERVER_KEY_FILE': certs / 'uploadserver-signer.key',
            'UPLOAD_SERVER_CERT_FILE': certs / 'uploadserver-signer.crt',
            'UPLOAD_CLIENT_KEY_FILE': certs / 'uploadserver-client-signer.key',
            'UPLOAD_CLIENT_CERT_FILE':
                certs / 'uploadserver-client-signer.crt'})
        return self

    def _signing_keys(self, timeout=READY_TIMEOUT):
        """cdi-apiserver's signing key pair, as the controller mounts it."""
        path = '/api/v1/namespaces/%s/secrets/cdi-api-signing-key' % NAMESPACE
        found = {}

        def made():
            status, found['body'] = self.cp.request('GET', path)
            return status == 200
        server.wait_ready([self.processes['cdi-apiserver']], made, timeout)
        body = found['body']
        keys = self.workdir / 'token-keys'
        keys.mkdir(exist_ok=True)
        for name in ('id_rsa', 'id_rsa.pub'):
            (keys / name).write_bytes(base64.b64decode(body['data'][name]))
        return keys

    def _network(self, name, inbound=(), mounts=None):
        net = podnet.PodNetwork(self.workdir / ('net-' + name),
                                outbound=(self.cp.port,), inbound=inbound,
                                mounts=mounts)
        self.networks[name] = net
        return net

    def _run(self, name, args, env):
        kubeconfig = self.cp.service_account_kubeconfig(
            self.workdir / ('%s.kubeconfig' % name), NAMESPACE,
            ACCOUNTS[name])
        argv = ['env'] + ['%s=%s' % item for item in env.items()] + [
            str(self.binaries[name]), '--kubeconfig', str(kubeconfig),
            '-v', '1'] + args
        self.processes[name] = self.networks[name].start(
            argv, lambda argv: server.Process(
                name, argv, self.workdir / ('%s.log' % name)).start())

    def wait_ready(self, timeout=READY_TIMEOUT):
        """The upload API answers through kube-apiserver's aggregator."""
        server.wait_ready(
            [self.processes[name]
             for name in ('cdi-apiserver', 'cdi-controller')],
            lambda: self.cp.request(
                'GET', '/apis/upload.cdi.kubevirt.io/v1beta1')[0] == 200,
            timeout, poll=0.3)

    def stop(self):
        for proc in self.processes.values():
            proc.stop()
        for net in self.networks.values():
            net.stop()
        self.processes = {}
