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

"""The scheduler's and the kubelets' part: pods bound, run and ended.

A pod with no node is bound (``pods/binding``) to a simulated node whose
labels match its ``nodeSelector``, once every claim it mounts is Bound (the
scheduler's VolumeBinding: a pod with an unbound immediate claim is
unschedulable until the claim changes). A bound pod runs a stage delay later:
its init containers terminated, its containers running and ready, its
readiness gates honoured, a pod IP (not before the ConfigMaps its
volumes need exist). A pod being deleted ends as a kubelet
ends it: its containers are told to stop, and the object is deleted
(grace 0) once they have: for a virt-launcher pod, when its VMI's domain
is gone (the VMI is final or gone) or the grace period is over; for any
other pod at once. Pods that ``exits`` names are left to their owners.
"""

import itertools
import logging

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator.nodes import volumes
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator.virt import model

LOG = logging.getLogger(__name__)
PODS = storage.ResourceType('', 'v1', 'pods', 'Pod', custom=False)
NODES = storage.ResourceType('', 'v1', 'nodes', 'Node', namespaced=False,
                             custom=False)
CONFIGMAPS = storage.ResourceType('', 'v1', 'configmaps', 'ConfigMap',
                                  custom=False)
LAUNCHER_LABEL = ('kubevirt.io', 'virt-launcher')
#: Seconds before the kubelet tries a failed volume mount again.
MOUNT_RETRY = 2.0


class Kubelet:
    """Binds, runs and ends the pods of the simulated nodes."""

    def __init__(self, store, scheduler, nodes, delays):
        self.store = store
        self.scheduler = scheduler
        self.nodes = nodes          # {name: labels}
        self.delays = delays
        self._ips = itertools.count(2)
        self._next_node = itertools.cycle(sorted(nodes))
        #: {pod kind: fn(pod) -> True once its containers have exited}
        self.exits = {}
        #: fn(pod) for a running pod whose containers end on their own
        self.workloads = []
        self._started = {}      # pod uid -> sim time it was first seen bound
        self._deadline = {}     # pod uid -> sim time its grace period ends
        self._unbound = {}      # (ns, claim) -> names of pods it holds back

    def enqueue(self, ns, name, delay=0.0):
        self.scheduler.call_later(delay, lambda: self._sync(ns, name),
                                  key=('pod', ns, name))

    def on_event(self, event, rt, obj, old):
        meta = obj['metadata']
        if rt.key == PODS.key:
            self.enqueue(meta['namespace'], meta['name'])
        elif rt.key == volumes.PVCS.key:
            key = (meta['namespace'], meta['name'])
            self.scheduler.call_later(0, lambda: self._claim_changed(key),
                                      key=('claim',) + key)
        elif rt.key == model.VMI_RT.key:
            for pod in self.launcher_pods(meta['namespace'], meta['uid']):
                self.enqueue(pod['metadata']['namespace'],
                             pod['metadata']['name'])

    def launcher_pods(self, ns, vmi_uid):
        pods, _ = self.store.list(PODS, ns)
        return [p for p in pods if (p['metadata'].get('labels') or {}).get(
            'kubevirt.io/created-by') == vmi_uid]

    def _sync(self, ns, name):
        pod = self.store.try_get(PODS, ns, name)
        if pod is None:
            return
        spec, status = pod['spec'], pod.get('status') or {}
        if pod['metadata'].get('deletionTimestamp'):
            self._end(pod)
        elif not spec.get('nodeName'):
            self._bind(pod)
        elif spec['nodeName'] in self.nodes and \
                status.get('phase', 'Pending') == 'Pending':
            self._run(pod)
        elif spec['nodeName'] in self.nodes and \
                status.get('phase') == 'Running':
            self._sync_ready(pod)
            for workload in self.workloads:
                workload(pod)

    def _claim_changed(self, key):
        for name in self._unbound.pop(key, ()):
            self._sync(key[0], name)

    def _unbound_claim(self, pod):
        ns = pod['metadata']['namespace']
        for volume in pod['spec'].get('volumes') or ():
            claim = (volume.get('persistentVolumeClaim') or {}).get(
                'claimName')
            pvc = claim and self.store.try_get(volumes.PVCS, ns, claim)
            if claim and (pvc is None or
                          pvc['metadata'].get('deletionTimestamp') or
                          (pvc.get('status') or {}).get('phase') != 'Bound'):
                return claim
        return None

    def _bind(self, pod):
        meta = pod['metadata']
        claim = self._unbound_claim(pod)
        if claim:
            self._unbound.setdefault((meta['namespace'], claim), set()).add(
                meta['name'])
            return
        selector = pod['spec'].get('nodeSelector') or {}
        for _ in range(len(self.nodes)):
            node = next(self._next_node)
            labels = self.nodes[node]
            if all(labels.get(k) == v for k, v in selector.items()):
                break
        else:
            LOG.info('no simulated node matches pod %s/%s',
                     pod['metadata']['namespace'], pod['metadata']['name'])
            return
        with apistatus.ignoring(404, 409):
            self.store.request(
                'POST', self.store.path(PODS, meta['namespace'],
                                        meta['name'], 'binding'),
                body={'apiVersion': 'v1', 'kind': 'Binding',
                      'metadata': {'name': meta['name'],
                                   'namespace': meta['namespace'],
                                   'uid': meta['uid']},
                      'target': {'apiVersion': 'v1', 'kind': 'Node',
                                 'name': node}})

    def _run(self, pod):
        uid = pod['metadata']['uid']
        delay = self.delays['PodRunning']
        started = self._started.setdefault(uid, self.scheduler.clock.now())
        remaining = started + delay - self.scheduler.clock.now()
        if remaining > 0:
            self.enqueue(pod['metadata']['namespace'],
                         pod['metadata']['name'], remaining)
            return
        missing = self._missing_configmap(pod)
        if missing:
            LOG.info('pod %s/%s: configmap "%s" not found; mount retried',
                     pod['metadata']['namespace'], pod['metadata']['name'],
                     missing)
            self.enqueue(pod['metadata']['namespace'],
                         pod['metadata']['name'], MOUNT_RETRY)
            return
        now = storage.now_iso()
        ip = pod_ip(pod, self._ips)

        def running(status):
            status.update({
                'phase': 'Running', 'hostIP': '127.0.0.1',
                'hostIPs': [{'ip': '127.0.0.1'}],
                'podIP': ip, 'podIPs': [{'ip': ip}], 'startTime': now})
            status['initContainerStatuses'] = [
                container_status(c, now, terminated=True)
                for c in pod['spec'].get('initContainers') or ()]
            status['containerStatuses'] = [
                container_status(c, now)
                for c in pod['spec'].get('containers') or ()]
            put_conditions(status, pod['spec'], now)
        self.set_pod_status(pod, running)

    def _missing_configmap(self, pod):
        """A ConfigMap a volume needs that does not exist, or None.

        The kubelet starts no container before its volumes are mounted.
        """
        for volume in pod['spec'].get('volumes') or ():
            source = volume.get('configMap')
            if source and not source.get('optional') and \
                    self.store.read_live(CONFIGMAPS,
                                         pod['metadata']['namespace'],
                                         source.get('name')) is None:
                return source.get('name')
        return None

    def _sync_ready(self, pod):
        """Keep Ready in step with the pod's readiness gates."""
        now = storage.now_iso()

        def ready(status):
            put_conditions(status, pod['spec'], now)
        self.set_pod_status(pod, ready)

    def _end(self, pod):
        exited = self.exits.get(pod_kind(pod), lambda p: True)(pod)
        meta = pod['metadata']
        if not exited:
            grace = meta.get('deletionGracePeriodSeconds') or 0
            self.enqueue(meta['namespace'], meta['name'],
                         min(float(grace), 1.0))
            if not self._past_grace(pod):
                return
        with apistatus.ignoring(404, 409):
            self.store.request('DELETE', self.store.path(
                PODS, meta['namespace'], meta['name']),
                body={'apiVersion': 'v1', 'kind': 'DeleteOptions',
                      'gracePeriodSeconds': 0,
                      'preconditions': {'uid': meta['uid']}})

    def _past_grace(self, pod):
        due = self._deadline.setdefault(
            pod['metadata']['uid'], self.scheduler.clock.now() + float(
                pod['metadata'].get('deletionGracePeriodSeconds') or 0))
        return self.scheduler.clock.now() >= due

    def set_pod_status(self, pod, fn):
        meta = pod['metadata']
        uid = meta['uid']

        def change(obj):
            if obj['metadata']['uid'] == uid:
                fn(obj.setdefault('status', {}))
        with apistatus.ignoring(404):
            self.store.mutate(PODS, meta['namespace'], meta['name'], change,
                              subresource='status', manager='kubelet')


def pod_kind(pod):
    labels = pod['metadata'].get('labels') or {}
    return labels.get('kubevirt.io') or labels.get('app') or ''


def pod_ip(pod, counter):
    """Loopback for the pods the control plane connects to.

    virt-api calls virt-handler; cdi-controller reads an importer's
    progress from ``https://<pod IP>:8443/metrics`` (in its own pod
    network that is its own metrics server: no progress, no error).
    """
    if pod['spec'].get('hostNetwork') or pod_kind(pod) in (
            'virt-handler', 'containerized-data-importer'):
        return '127.0.0.1'
    n = next(counter)
    return '10.244.%d.%d' % (n // 250, n % 250 + 2)


def container_status(container, now, terminated=False):
    state = ({'terminated': {'exitCode': 0, 'reason': 'Completed',
                             'startedAt': now, 'finishedAt': now}}
             if terminated else {'running': {'startedAt': now}})
    return {'name': container['name'], 'image': container.get('image', ''),
            'imageID': '', 'ready': True,
            'started': not terminated, 'restartCount': 0, 'state': state}


def put_conditions(status, spec, now):
    gates = [g['conditionType'] for g in spec.get('readinessGates') or ()]
    have = {c['type']: c for c in status.get('conditions') or ()}
    gated = all((have.get(g) or {}).get('status') == 'True' for g in gates)
    wanted = {'PodReadyToStartContainers': 'True', 'Initialized': 'True',
              'ContainersReady': 'True', 'PodScheduled': 'True',
              'Ready': 'True' if gated else 'False'}
    for kind, value in wanted.items():
        current = have.get(kind)
        if current is None or current.get('status') != value:
            have[kind] = {'type': kind, 'status': value,
                          'lastProbeTime': None, 'lastTransitionTime': now}
            if kind == 'Ready' and value == 'False':
                have[kind]['reason'] = 'ReadinessGatesNotReady'
    status['conditions'] = list(have.values())
