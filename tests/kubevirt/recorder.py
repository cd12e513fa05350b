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

"""A KubeVirt case's actions on one cluster and what they led to.

A transcript holds each action's answer (status, and the message of a
refusal with the names replaced) and each observation: the facts of the
VM, its VMI and the DataVolumes a case watches (``facts``), once they
have settled. An observation settles when its facts stay the same for
``STABLE`` seconds and no VM is in a passing state (Starting, Stopping,
Terminating), or, where the case gives one, its own condition holds;
past ``SETTLE`` seconds it is recorded as ``unsettled``.
"""

import json
import re
import time
import uuid

import requests

SUBRESOURCES = '/apis/subresources.kubevirt.io/v1/namespaces/%s/%s/%s/%s'
KV = '/apis/kubevirt.io/v1/namespaces/%s/%s'
CDI = '/apis/cdi.kubevirt.io/v1beta1/namespaces/%s/datavolumes'
PVC = '/api/v1/namespaces/%s/persistentvolumeclaims'
JSON_PATCH = 'application/json-patch+json'
STABLE = 3.0
SETTLE = 90.0
PASSING = ('Starting', 'Stopping', 'Terminating', 'Migrating')
VM_CONDITIONS = ('Ready', 'Paused', 'Failure', 'RestartRequired')


class Cluster:
    """One cluster: its name, an admin ``request`` and ``guest_ends``."""

    def __init__(self, name, cluster):
        self.name = name
        self.cluster = cluster
        self.namespace = 'default'

    def request(self, method, path, body=None, content_type=None):
        """``(status, decoded body)`` as the cluster's administrator."""
        ctype = content_type or 'application/json'
        if hasattr(self.cluster, 'control_plane'):
            return self.cluster.control_plane.request(
                method, path, body, timeout=30, content_type=ctype)
        resp = requests.request(
            method, self.cluster.url + path, timeout=30,
            verify=self.cluster.ca_file,
            data=None if body is None else json.dumps(body),
            headers={'Authorization': 'Bearer ' + self.cluster.token,
                     'Content-Type': ctype})
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, resp.text


def _conditions(obj, types=None):
    return {c['type']: c.get('status')
            for c in (obj.get('status') or {}).get('conditions') or ()
            if types is None or c['type'] in types}


def _uuid_kind(value):
    """``uuid4`` for a random UUID, ``uuid5`` for a derived one."""
    try:
        return 'uuid%d' % uuid.UUID(str(value)).version
    except ValueError:
        return 'missing' if value is None else 'other'


def vm_facts(vm):
    status = vm.get('status') or {}
    firmware = vm['spec']['template']['spec']['domain'].get('firmware') or {}
    return {
        'firmware': {key: _uuid_kind(firmware.get(key))
                     for key in ('uuid', 'serial')},
        'printableStatus': status.get('printableStatus'),
        'runStrategy': vm['spec'].get('runStrategy'),
        'ready': bool(status.get('ready')),
        'created': bool(status.get('created')),
        'stateChangeRequests': [r.get('action') for r in
                                status.get('stateChangeRequests') or ()],
        'conditions': _conditions(vm, VM_CONDITIONS),
    }


def dv_facts(dv, pvc):
    """A DataVolume and its claim, as the driver reads them."""
    if dv is None:
        return {'exists': False, 'claim': pvc is not None}
    status = dv.get('status') or {}
    running = [c for c in status.get('conditions') or ()
               if c['type'] == 'Running']
    phase = status.get('phase')
    return {
        'exists': True, 'deleting': 'deletionTimestamp' in dv['metadata'],
        # The importer's passing phases are one: real CDI moves between
        # them as the pod restarts.
        'phase': ('Importing' if phase in ('ImportScheduled',
                                           'ImportInProgress') else phase),
        'running': running[0].get('reason') if running else None,
        'restarted': status.get('restartCount', 0) >= 1,
        'claim': pvc is not None,
    }


class Session:
    """Runs one case on one cluster, keeping its transcript."""

    def __init__(self, cluster, case):
        self.cluster = cluster
        self.ns = cluster.namespace
        self.vm = case.replace('_', '-').lower()
        self.transcript = []
        self.dvs = []
        self._vmi_uid = None

    # -- actions ----------------------------------------------------------

    def _record(self, action, status, body):
        step = {'action': action, 'status': status}
        if status >= 300 and isinstance(body, dict):
            step['message'] = self._words(body.get('message', ''))
        self.transcript.append(step)
        return status, body

    def _words(self, text):
        for name in sorted(self.dvs + [self.vm], key=len, reverse=True):
            text = text.replace(name, '<name>')
        return re.sub(r'\b[0-9a-f]{8}-[0-9a-f-]{27}\b', '<uid>', text)

    def create(self, body):
        return self._record('create VM', *self.cluster.request(
            'POST', KV % (self.ns, 'virtualmachines'), body))

    def subresource(self, action, kind='virtualmachines'):
        return self._record('%s %s' % (action, kind), *self.cluster.request(
            'PUT', SUBRESOURCES % (self.ns, kind, self.vm, action), {}))

    def patch_vm(self, what, ops_of):
        """A guarded JSON patch built by ``ops_of(vm)`` from a fresh read.

        Made again (at most 5 times) while its ``test`` fails: a
        controller's status write changed the resourceVersion meanwhile.
        """
        for _ in range(5):
            vm = self.read_vm()
            ops = [{'op': 'test', 'path': '/metadata/resourceVersion',
                    'value': vm['metadata']['resourceVersion']}] + ops_of(vm)
            status, body = self.cluster.request(
                'PATCH', KV % (self.ns, 'virtualmachines') + '/' + self.vm,
                ops, JSON_PATCH)
            if status != 422:
                break
        return self._record('patch ' + what, status, body)

    def create_dv(self, body):
        self.dvs.append(body['metadata']['name'])
        return self._record('create DataVolume', *self.cluster.request(
            'POST', CDI % self.ns, body))

    def create_configmap(self, body):
        return self._record('create ConfigMap', *self.cluster.request(
            'POST', '/api/v1/namespaces/%s/configmaps' % self.ns, body))

    def delete_dv(self, name):
        return self._record('delete DataVolume', *self.cluster.request(
            'DELETE', CDI % self.ns + '/' + name))

    def guest_ends(self, phase='Succeeded'):
        self.cluster.cluster.guest_ends(self.ns, self.vm, phase)
        self.transcript.append({'action': 'guest ends ' + phase})

    # -- observations -----------------------------------------------------

    def _get(self, path):
        status, body = self.cluster.request('GET', path)
        if status == 404:
            return None
        assert status == 200, (path, status, body)
        return body

    def read_vm(self):
        return self._get(KV % (self.ns, 'virtualmachines') + '/' + self.vm)

    def read_vmi(self):
        return self._get(KV % (self.ns, 'virtualmachineinstances') + '/'
                         + self.vm)

    def facts(self, vmi_devices=False):
        vm, vmi = self.read_vm(), self.read_vmi()
        facts = {'vm': vm_facts(vm) if vm else None, 'vmi': None}
        if vmi is not None:
            facts['vmi'] = {
                'phase': (vmi.get('status') or {}).get('phase'),
                'new': vmi['metadata']['uid'] != self._vmi_uid,
                'paused': _conditions(vmi).get('Paused') == 'True',
                'deleting': 'deletionTimestamp' in vmi['metadata']}
            if vmi_devices:
                spec = vmi['spec']
                facts['vmi']['disks'] = sorted(
                    (d['name'], d.get('bootOrder')) for d in
                    spec['domain']['devices'].get('disks') or ())
                facts['vmi']['volumes'] = sorted(
                    v['name'] for v in spec.get('volumes') or ())
        for name in self.dvs:
            facts['dv ' + self._words(name)] = dv_facts(
                self._get(CDI % self.ns + '/' + name),
                self._get(PVC % self.ns + '/' + name))
        return facts, vmi

    def observe(self, until=None, vmi_devices=False):
        """Record the facts once settled (or once ``until(facts)``)."""
        deadline = time.monotonic() + SETTLE
        last, since = None, time.monotonic()
        while True:
            facts, vmi = self.facts(vmi_devices)
            now = time.monotonic()
            if facts != last:
                last, since = facts, now
            vm = facts['vm'] or {}
            settled = now - since >= STABLE and (
                until(facts) if until is not None else
                vm.get('printableStatus') not in PASSING)
            if settled or now > deadline:
                break
            time.sleep(0.2)
        if not settled:
            facts['unsettled'] = True
        self._vmi_uid = vmi['metadata']['uid'] if vmi else None
        self.transcript.append({'observed': facts})
        return facts
