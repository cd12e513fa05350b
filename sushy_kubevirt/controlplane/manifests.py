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

"""An operator's install, applied to a control plane whose pods are local.

KubeVirt's and CDI's operators install Deployments whose pods a kubelet
would run behind Services. Here those components are local processes on
loopback, so ``localize`` rewrites what points at them:

* the Deployments and DaemonSets are left out (``started`` runs them),
  and so are OpenShift's kinds and the instancetype catalogue;
* a webhook whose Service is started calls ``https://127.0.0.1:PORT/path``
  (kube-apiserver resolves a Service to cluster IPs that do not exist
  here), with the serving CA; a webhook of a component not started
  (virt-operator's) is dropped;
* an APIService of a started Service gets its port and CA, and the
  Service becomes an ``ExternalName`` of 127.0.0.1 (Endpoints refuse
  loopback addresses; the aggregator resolves an ExternalName Service to
  ``https://<externalName>:<port>``).

``apply`` creates each object, CRDs first and established, then the
rest, replacing what exists.
"""

import base64
import copy
import time

HOST = '127.0.0.1'
LEFT_OUT = frozenset({
    'Deployment', 'DaemonSet', 'SecurityContextConstraints', 'Route',
    'ServiceMonitor', 'PrometheusRule', 'VirtualMachineClusterInstancetype',
    'VirtualMachineClusterPreference'})
#: kinds whose manifests carry a bare ``v1`` for their group's
GROUP_VERSIONS = {
    'ValidatingAdmissionPolicy': 'admissionregistration.k8s.io/v1',
    'ValidatingAdmissionPolicyBinding': 'admissionregistration.k8s.io/v1'}
CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'


def localize(objects, services, ca_pem):
    """The objects to apply, pointed at local processes.

    :param services: ``{(namespace, service name): port}`` of the
        components started on loopback.
    :param ca_pem: the CA that signed their serving certificates.
    """
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for obj in objects:
        kind = obj.get('kind')
        if kind in LEFT_OUT:
            continue
        obj = copy.deepcopy(obj)
        if kind in GROUP_VERSIONS:
            obj['apiVersion'] = GROUP_VERSIONS[kind]
        meta = obj['metadata']
        key = (meta.get('namespace'), meta['name'])
        if kind.endswith('WebhookConfiguration'):
            obj['webhooks'] = [
                _webhook(hook, services, bundle)
                for hook in obj.get('webhooks') or ()
                if _service_key(hook['clientConfig']) in services]
            if not obj['webhooks']:
                continue
        elif kind == 'APIService':
            ref = obj['spec']['service']
            port = services.get((ref['namespace'], ref['name']))
            if port is None:
                continue
            ref['port'] = port
            obj['spec']['caBundle'] = bundle
        elif kind == 'Service' and key in services:
            obj['spec'] = {'type': 'ExternalName', 'externalName': HOST}
        out.append(obj)
    return out


def _service_key(client_config):
    ref = client_config.get('service') or {}
    return ref.get('namespace'), ref.get('name')


def _webhook(hook, services, bundle):
    ref = hook['clientConfig']['service']
    port = services[(ref['namespace'], ref['name'])]
    hook['clientConfig'] = {
        'url': 'https://%s:%d%s' % (HOST, port, ref.get('path') or '/'),
        'caBundle': bundle}
    return hook


def path_of(obj, discovery):
    """The collection path of ``obj``.

    ``discovery[(group/version, kind)]`` is ``(plural, namespaced)``.
    """
    gv = obj['apiVersion']
    plural, namespaced = discovery[(gv, obj['kind'])]
    base = '/api/v1' if gv == 'v1' else '/apis/' + gv
    ns = obj['metadata'].get('namespace')
    if namespaced and ns:
        return '%s/namespaces/%s/%s' % (base, ns, plural)
    return '%s/%s' % (base, plural)


def discover(cp, group_versions):
    """``{(group/version, kind): (plural, namespaced)}`` from the server."""
    found = {}
    for gv in group_versions:
        status, body = cp.request(
            'GET', '/api/v1' if gv == 'v1' else '/apis/' + gv)
        if status != 200:
            continue
        for res in body.get('resources') or ():
            if '/' not in res['name']:
                found[(gv, res['kind'])] = (res['name'], res['namespaced'])
    return found


def apply(cp, objects, timeout=60.0):
    """Apply ``objects`` to ``cp`` (a ``server.ControlPlane``).

    CRDs first, each awaited until established; then the rest in order.
    """
    crds = [o for o in objects if o['kind'] == 'CustomResourceDefinition']
    if crds:
        cp.install_crds(crds, timeout=timeout)
    rest = [o for o in objects if o['kind'] != 'CustomResourceDefinition']
    discovery = discover(cp, sorted({o['apiVersion'] for o in rest}))
    for namespace in sorted({o['metadata'].get('namespace')
                             for o in rest} - {None}):
        cp.ensure_namespace(namespace)
    for obj in rest:
        deadline = time.monotonic() + timeout
        while True:
            try:
                cp.apply(path_of(obj, discovery), obj)
                break
            except Exception:
                # A webhook of a process still starting refuses at first.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
