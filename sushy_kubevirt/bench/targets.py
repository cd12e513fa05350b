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

"""The two clusters under one interface, for ``bench.backends``.

``simulator`` is :class:`sushy_kubevirt.simulator.Simulator`;
``kube-apiserver`` is :class:`~sushy_kubevirt.simulator.realcluster.
RealCluster` (the emulator as its ServiceAccount under the shipped RBAC);
``kubevirt`` is that with the real KubeVirt and CDI, nodes simulated.
Both run in this process. Each gives its start-up times, the emulator's
API calls (from the request log, the real one's from its audit log), an
administrator's VM reads and patches, and the faults: an API server
restart, a compaction, and the emulator's permissions revoked.
"""

import collections
import contextlib
import json
import os
import time
from unittest import mock
import urllib.error
import urllib.request

from sushy_kubevirt.bench import procs
from sushy_kubevirt.controlplane import rbac
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import auditlog
from sushy_kubevirt.simulator import objects

BACKENDS = ('simulator', 'kube-apiserver', 'kubevirt')
EMULATOR_USER = rbac.EMULATOR_USER
VMS = '/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s'
CRB = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings'
MERGE = 'application/merge-patch+json'


@contextlib.contextmanager
def _timed_seed(marks):
    """Time ``objects.seed`` (both backends seed through it)."""
    seed = objects.seed

    def timed(*args, **kwargs):
        started = time.monotonic()
        try:
            return seed(*args, **kwargs)
        finally:
            marks['seed_s'] = round(time.monotonic() - started, 3)
    with mock.patch.object(objects, 'seed', timed):
        yield


class Target:
    """One cluster: start, count the emulator's calls, admin, faults."""

    name = None

    def __init__(self, vms, namespaces, workdir, time_scale=1.0,
                 crd_schemas=None):
        self.vms, self.namespaces = vms, namespaces
        self.workdir, self.time_scale = workdir, time_scale
        # None: the cluster reads $SUSHY_KUBEVIRT_SIMULATOR_CRD_SCHEMAS
        # itself (the simulator skips a missing directory with a warning).
        self.crd_schemas = crd_schemas
        self.cluster = None

    @property
    def namespace_names(self):
        return objects.namespace_names(self.namespaces)

    def vm_name(self, index):
        """(namespace, name) of seeded VM ``index``."""
        names = self.namespace_names
        return names[index % len(names)], 'vm-%05d' % index

    def start(self):
        """Start the cluster with its VMs; the times, in seconds."""
        marks = {}
        cpu, started = time.process_time(), time.monotonic()
        with _timed_seed(marks):
            self._start(marks)
        marks['total_s'] = round(time.monotonic() - started, 3)
        marks['seed_vms_per_s'] = (round(self.vms / marks['seed_s'], 1)
                                   if marks.get('seed_s') else None)
        marks['harness_cpu_s'] = round(time.process_time() - cpu, 1)
        return marks

    def calls(self, since, until=None):
        """``{'verb resource': n}``: the emulator's calls but watches."""
        entries = self.cluster.request_log.entries(
            user=EMULATOR_USER, verb=lambda verb: verb != 'watch',
            started=lambda t: t >= since and (until is None or t <= until))
        return dict(collections.Counter(
            '%s %s' % (e['verb'], e['resource']) for e in entries))

    def all_calls(self, since, until):
        """``{(user, 'verb resource'): n}``: every client's, watches too."""
        return dict(collections.Counter(
            (e['user'], '%s %s' % (e['verb'], e['resource']))
            for e in self._all_entries()
            if since <= e['started'] <= until))

    def processes(self):
        """``{name: pid}`` of the control plane's processes."""
        return {}

    def node_id(self, index):
        """The Redfish System id of seeded VM ``index``."""
        return identity.firmware_uuid(self.get_vm(*self.vm_name(index)))

    def get_vm(self, namespace, name):
        status, body = self.admin('GET', VMS % (namespace, name))
        if status != 200:
            raise RuntimeError('GET VM %s/%s: %s %s' % (namespace, name,
                                                        status, body))
        return body

    def patch_vm(self, namespace, name, patch):
        status, body = self.admin('PATCH', VMS % (namespace, name), patch,
                                  MERGE)
        if status != 200:
            raise RuntimeError('PATCH VM %s/%s: %s %s' % (namespace, name,
                                                          status, body))
        return body

    def restart(self, down_s):
        """Restart the API server (kube-apiserver: ``kill -9``).

        It serves again after ``down_s``; returns the seconds until it
        does (ready).
        """
        started = time.monotonic()
        back = self.cluster.restart_api(down_s)
        if hasattr(back, 'wait'):
            # An Event, set once the server is ready again.
            if not back.wait(down_s + 180):
                raise RuntimeError('the API server did not come back')
        return round(time.monotonic() - started, 3)

    def stop(self):
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None


class SimulatorTarget(Target):

    name = 'simulator'
    token = 'sushy-kubevirt-emulator'

    def _start(self, marks):
        from sushy_kubevirt.simulator import Simulator
        self.cluster = Simulator(vms=self.vms, namespaces=self.namespaces,
                                 time_scale=self.time_scale,
                                 crd_schemas=self.crd_schemas,
                                 tls=False).start()
        self.cluster.authz.add_token(self.token, EMULATOR_USER)

    def emulator_kubeconfig(self):
        return self.cluster.write_kubeconfig(
            os.path.join(self.workdir, 'sim.kubeconfig'),
            user_token=self.token)

    def admin(self, method, path, body=None, content_type=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.cluster.url + path, data=data,
                                     method=method)
        req.add_header('Authorization', 'Bearer ' + self.cluster.token)
        if data is not None:
            req.add_header('Content-Type', content_type or
                           'application/json')
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors='replace')

    def _all_entries(self):
        return self.cluster.request_log.entries()

    def compact(self):
        self.cluster.store.compact()
        return self.cluster.store.compacted_resource_version

    def revoke(self):
        self.cluster.authz.deny(user=EMULATOR_USER)

    def restore(self):
        self.cluster.authz.clear()


class RealTarget(Target):

    name = 'kube-apiserver'
    kubevirt = False

    def _start(self, marks):
        # Imported here: the control plane needs the [controlplane] extra.
        from sushy_kubevirt.simulator import realcluster
        self.cluster = realcluster.RealCluster(
            vms=self.vms, namespaces=self.namespaces,
            time_scale=self.time_scale, crd_schemas=self.crd_schemas,
            kubevirt=self.kubevirt)
        cp = self.cluster.control_plane
        cp_start = cp.start

        def timed():
            started = time.monotonic()
            try:
                return cp_start()
            finally:
                marks['control_plane_s'] = round(
                    time.monotonic() - started, 3)
        cp.start = timed
        self.cluster.start()
        processes = self.processes()
        marks['control_plane_cpu_s'] = {
            name: round(procs.cpu_s(pid), 1)
            for name, pid in processes.items()}
        marks['control_plane_rss_mb'] = {
            name: round(sum(procs.rss_kb(pid).values()) / 1024)
            for name, pid in processes.items()}
        self._binding = None

    def processes(self):
        found = dict(self.cluster.control_plane.processes)
        for part in (self.cluster.kubevirt, self.cluster.cdi):
            found.update(part.processes if part else {})
        return {name: p.proc.pid for name, p in found.items()}

    def _all_entries(self):
        """Every request of the audit log (read anew: it is not kept)."""
        with open(self.cluster.control_plane.audit_path, 'rb') as stream:
            for line in stream:
                if line.endswith(b'\n'):
                    yield auditlog.entry(json.loads(line))

    def emulator_kubeconfig(self):
        return self.cluster.write_kubeconfig(
            os.path.join(self.workdir, 'real.kubeconfig'))

    def admin(self, method, path, body=None, content_type=None):
        return self.cluster.control_plane.request(
            method, path, body, timeout=30,
            content_type=content_type or 'application/json')

    def restart(self, down_s):
        """``kill -9`` kube-apiserver, start it again from this thread.

        Not through ``RealCluster.restart_api`` when that starts it from a
        thread of its own: kube-apiserver is spawned with
        ``PR_SET_PDEATHSIG``, which fires when the *thread* that forked it
        ends, so it would get SIGTERM about a second after it is ready.
        """
        cp = self.cluster.control_plane
        started = time.monotonic()
        if hasattr(cp, 'kill_apiserver'):
            cp.kill_apiserver()
            cp.start_apiserver(delay=down_s)
        else:
            cp.restart_apiserver(down_seconds=down_s)
        return round(time.monotonic() - started, 3)

    def compact(self):
        return self.cluster.compact()

    def revoke(self):
        """Delete the ClusterRoleBinding ``sushy-kubevirt``."""
        path = '%s/%s' % (CRB, 'sushy-kubevirt')
        status, body = self.admin('GET', path)
        if status != 200:
            raise RuntimeError('GET %s: %s %s' % (path, status, body))
        self._binding = {k: body[k] for k in ('apiVersion', 'kind',
                                              'roleRef', 'subjects')}
        self._binding['metadata'] = {'name': body['metadata']['name']}
        status, body = self.admin('DELETE', path)
        if status != 200:
            raise RuntimeError('DELETE %s: %s %s' % (path, status, body))

    def restore(self):
        status, body = self.admin('POST', CRB, self._binding)
        if status != 201:
            raise RuntimeError('POST %s: %s %s' % (CRB, status, body))


class KubeVirtTarget(RealTarget):

    name = 'kubevirt'
    kubevirt = True


def make(backend, *args, **kwargs):
    targets = {'simulator': SimulatorTarget, 'kube-apiserver': RealTarget,
               'kubevirt': KubeVirtTarget}
    if backend not in targets:
        raise ValueError('unknown backend %r' % backend)
    return targets[backend](*args, **kwargs)
