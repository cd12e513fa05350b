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

"""Simulated nodes under a real KubeVirt, KWOK-style.

``Nodes(cp, kubevirt).start()`` plays, on a real control plane whose
virt-api and virt-controller run (``controlplane.kubevirt``), what runs on
nodes, and nothing else:

``kubelet``     the scheduler's binding and the kubelets: pods run, end
``handler``     virt-handler and the guest: VMIs run, reboot, shut down
``handlerapi``  virt-handler's HTTPS API that virt-api calls
``importer``    CDI's importer pods: the source fetched, success or restarts
``volumes``     a provisioner: the default StorageClass, PVs for claims

Each node is a ``Node`` labelled as virt-handler labels it (schedulable,
its machine types), with a virt-handler pod on it (IP 127.0.0.1). The
handler's token is bound to that pod, so kube-apiserver names the node in
it and KubeVirt's ValidatingAdmissionPolicy lets it write the node's
heartbeat (``kubevirt.io/heartbeat``, every minute) and nothing else of
the node. VMI writes go with the same identity.
"""

import datetime

from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator.nodes import handler as handler_mod
from sushy_kubevirt.simulator.nodes import handlerapi
from sushy_kubevirt.simulator.nodes import importer as importer_mod
from sushy_kubevirt.simulator.nodes import kubelet as kubelet_mod
from sushy_kubevirt.simulator.nodes import volumes
from sushy_kubevirt.simulator import remote
from sushy_kubevirt.simulator.virt import model

KUBEVIRT_NAMESPACE = 'kubevirt'
DEFAULT_DELAYS = {'PodRunning': 0.3, 'Running': 0.5, 'Shutdown': None,
                  'AgentConnected': 0.5, 'ImportInProgress': 0.0}
HEARTBEAT = 60.0
READY_TIMEOUT = 60.0
NODE_LABELS = {
    'kubernetes.io/arch': 'amd64', 'kubernetes.io/os': 'linux',
    'kubevirt.io/schedulable': 'true',
    'machine-type.node.kubevirt.io/q35': 'true',
    'machine-type.node.kubevirt.io/pc-q35-rhel9.6.0': 'true',
    'cpu-vendor.node.kubevirt.io/Intel': 'true',
    'host-model-cpu.node.kubevirt.io/Skylake-Client-IBRS': 'true',
    'kubevirt.io/ksm-enabled': 'false'}
CAPACITY = {'cpu': '64', 'memory': '256Gi', 'pods': '1100',
            'ephemeral-storage': '1Ti', 'devices.kubevirt.io/kvm': '1k',
            'devices.kubevirt.io/tun': '1k',
            'devices.kubevirt.io/vhost-net': '1k'}


class Nodes:
    """``count`` simulated nodes with their kubelet and virt-handler."""

    def __init__(self, cp, kubevirt, workdir, *, count=1, time_scale=1.0,
                 stage_delays=None, guest_agent=False):
        self.cp = cp
        self.kubevirt = kubevirt
        self.workdir = workdir
        self.names = ['sim-node-%d' % i for i in range(count)]
        self.guest_agent = guest_agent
        self.delays = clock.stage_delays(DEFAULT_DELAYS, stage_delays)
        self.scheduler = clock.Scheduler(clock.Clock(time_scale),
                                         'sim nodes')
        self.store = None           # the kubelets' (admin) view
        self.handler_store = None   # virt-handler's
        self.tokens = {}            # node -> its handler's token
        self.kubelet = self.handler = self.api = None

    def start(self):
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        admin = self.cp.write_kubeconfig(self.workdir / 'nodes.kubeconfig')
        self.store = remote.RemoteStore(admin)
        labels = {name: dict(NODE_LABELS, **{'kubernetes.io/hostname': name})
                  for name in self.names}
        self.kubelet = kubelet_mod.Kubelet(self.store, self.scheduler,
                                           labels, self.delays)
        importer = importer_mod.Importer(self.kubelet, self.delays)
        self.kubelet.workloads.append(
            lambda pod: importer_mod.is_importer(pod) and importer.sync(pod))
        provisioner = volumes.Provisioner(self.store, self.scheduler)
        for rt in (kubelet_mod.PODS, model.VMI_RT, volumes.PVCS,
                   volumes.PVS):
            self.store.register(rt)
        self.store.wait_synced(READY_TIMEOUT)
        self.store.subscribe(self.kubelet.on_event)
        self.store.subscribe(provisioner.on_event)
        self.cp.apply('/apis/storage.k8s.io/v1/storageclasses',
                      volumes.storage_class())
        self.scheduler.start()
        for name in self.names:
            self._make_node(name, labels[name])
        pods = [self._make_handler_pod(name) for name in self.names]
        for pod in pods:
            self._await_running(pod)
            self.tokens[pod['spec']['nodeName']] = self._bound_token(pod)
        path = self.cp.write_kubeconfig(
            self.workdir / 'virt-handler.kubeconfig',
            token=self.tokens[self.names[0]], user='kubevirt-handler')
        self.handler_store = remote.RemoteStore(path)
        self.handler_store.register(model.VMI_RT)
        self.handler_store.wait_synced(READY_TIMEOUT)
        self.handler = handler_mod.Handler(
            self.handler_store, self.scheduler, set(self.names), self.delays,
            self.guest_agent)
        self.kubelet.exits['virt-launcher'] = self._launcher_exited
        self.handler_store.subscribe(self.handler.on_event)
        certs = self.kubevirt.workdir / 'pki'
        self.api = handlerapi.HandlerAPI(
            self.handler, certs / 'virt-handler-server.crt',
            certs / 'virt-handler-server.key',
            certs / 'kubevirt-ca.crt').start(self.kubevirt.handler_socket)
        for name in self.names:
            self._heartbeat(name)

    def _make_node(self, name, labels):
        node = self.cp.apply('/api/v1/nodes', {
            'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': name, 'labels': labels,
                         'annotations': {
                             'kubevirt.io/heartbeat': _now()}}})
        node['status'] = {
            'capacity': CAPACITY, 'allocatable': CAPACITY,
            'conditions': [{'type': 'Ready', 'status': 'True',
                            'reason': 'KubeletReady',
                            'message': 'kubelet is posting ready status',
                            'lastHeartbeatTime': _now(),
                            'lastTransitionTime': _now()}],
            'addresses': [{'type': 'InternalIP', 'address': '127.0.0.1'},
                          {'type': 'Hostname', 'address': name}],
            'nodeInfo': {'architecture': 'amd64', 'operatingSystem': 'linux',
                         'kubeletVersion': 'v1.34.4',
                         'containerRuntimeVersion': 'sim://1',
                         'kernelVersion': '', 'osImage': 'simulated',
                         'bootID': '', 'machineID': '', 'systemUUID': '',
                         'kubeProxyVersion': ''}}
        status, body = self.cp.request(
            'PUT', '/api/v1/nodes/%s/status' % name, node)
        if status != 200:
            raise RuntimeError('node %s status: %s %s' % (name, status, body))

    def _make_handler_pod(self, node):
        path = '/api/v1/namespaces/%s/pods' % KUBEVIRT_NAMESPACE
        return self.cp.apply(path, {
            'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'name': 'virt-handler-%s' % node,
                         'namespace': KUBEVIRT_NAMESPACE,
                         'labels': {'kubevirt.io': 'virt-handler'}},
            'spec': {'nodeName': node,
                     'serviceAccountName': 'kubevirt-handler',
                     'automountServiceAccountToken': False,
                     'containers': [{
                         'name': 'virt-handler',
                         'image': 'quay.io/kubevirt/virt-handler'}]}})

    def _await_running(self, pod):
        meta = pod['metadata']
        clock.wait_for(lambda: (self.store.try_get(
            kubelet_mod.PODS, meta['namespace'], meta['name']) or {}).get(
                'status', {}).get('phase') == 'Running', READY_TIMEOUT)

    def _bound_token(self, pod):
        meta = pod['metadata']
        status, body = self.cp.request(
            'POST', '/api/v1/namespaces/%s/serviceaccounts/kubevirt-handler'
            '/token' % KUBEVIRT_NAMESPACE, {
                'apiVersion': 'authentication.k8s.io/v1',
                'kind': 'TokenRequest',
                'spec': {'expirationSeconds': 86400, 'boundObjectRef': {
                    'apiVersion': 'v1', 'kind': 'Pod',
                    'name': meta['name'], 'uid': meta['uid']}}})
        if status != 201:
            raise RuntimeError('TokenRequest for virt-handler on %s: %s %s'
                               % (pod['spec']['nodeName'], status, body))
        return body['status']['token']

    def _heartbeat(self, name):
        """As virt-handler: the node's heartbeat and schedulable label."""
        self.cp.request(
            'PATCH', '/api/v1/nodes/%s' % name,
            {'metadata': {'annotations': {'kubevirt.io/heartbeat': _now()},
                          'labels': {'kubevirt.io/schedulable': 'true'}}},
            token=self.tokens[name],
            content_type='application/merge-patch+json')
        self.scheduler.call_later(HEARTBEAT, lambda: self._heartbeat(name),
                                  key=('heartbeat', name))

    def _launcher_exited(self, pod):
        """virt-launcher exits once its domain is gone."""
        uid = (pod['metadata'].get('labels') or {}).get(
            'kubevirt.io/created-by')
        for vmi in self.store.list(model.VMI_RT,
                                   pod['metadata']['namespace'])[0]:
            if vmi['metadata']['uid'] == uid:
                return model.is_final(vmi)
        return True

    def stop(self):
        self.scheduler.stop()
        if self.api is not None:
            self.api.stop()
        for store in (self.handler_store, self.store):
            if store is not None:
                store.stop()


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')
