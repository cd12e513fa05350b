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

"""Change-to-visibility lag: edit a VM via the Kubernetes API, poll Redfish.

The edit is what another client would do (``kubectl edit``): CPU cores of
the VM template +1 or -1 through the official ``kubernetes`` client, as a
JSON patch. The lag is the time until ``ProcessorSummary.Count`` of the
matching Redfish System shows the new value.
"""

import json
import time

import kubernetes

from sushy_kubevirt.bench import procs

_GROUP, _VERSION, _PLURAL = 'kubevirt.io', 'v1', 'virtualmachines'
_CORES = '/spec/template/spec/domain/cpu/cores'


def _system(port, system_id):
    status, body = procs.http_get(port, '/redfish/v1/Systems/%s' % system_id)
    if status != 200:
        raise RuntimeError('GET System %s: %s %s'
                           % (system_id, status, body[:200]))
    return json.loads(body)


def _find_vm(api, namespaces, system):
    for namespace in namespaces:
        items = api.list_namespaced_custom_object(
            _GROUP, _VERSION, namespace, _PLURAL)['items']
        for vm in items:
            domain = vm['spec']['template']['spec']['domain']
            if (domain.get('firmware', {}).get('uuid') == system['UUID']
                    or vm['metadata']['name'] == system['Name']):
                return vm
    raise LookupError('no VM matches System %s' % system['Id'])


def _count(port, system_id):
    return _system(port, system_id)['ProcessorSummary']['Count']


def measure(port, kubeconfig, namespaces, system_id, samples=4,
            deadline_s=10.0):
    """Lags in seconds (None for a change not seen before the deadline)."""
    client = kubernetes.config.new_client_from_config(kubeconfig)
    try:
        api = kubernetes.client.CustomObjectsApi(client)
        vm = _find_vm(api, namespaces, _system(port, system_id))
        meta = vm['metadata']
        lags = []
        for i in range(samples):
            before = _count(port, system_id)
            cores = vm['spec']['template']['spec']['domain']['cpu']['cores']
            cores += 1 if i % 2 == 0 else -1
            vm = api.patch_namespaced_custom_object(
                _GROUP, _VERSION, meta['namespace'], _PLURAL, meta['name'],
                [{'op': 'replace', 'path': _CORES, 'value': cores}],
                _content_type='application/json-patch+json')
            started = time.perf_counter()
            lags.append(_wait_change(port, system_id, before, started,
                                     deadline_s))
        return lags
    finally:
        client.close()


def _wait_change(port, system_id, before, started, deadline_s):
    while time.perf_counter() - started < deadline_s:
        if _count(port, system_id) != before:
            return round(time.perf_counter() - started, 4)
        time.sleep(0.002)
    return None
