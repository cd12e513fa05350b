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

"""Helpers for the KubeVirt tests: raw and virt-api calls, VM waits."""

from kubernetes import client
import pytest
from tests.functional.simulator import apitools

from sushy_kubevirt.simulator import objects

G, V = 'kubevirt.io', 'v1'
VMS, VMIS = 'virtualmachines', 'virtualmachineinstances'
TINY = {'Pending': 0, 'Scheduling': 0.5, 'Scheduled': 0.5, 'Running': 0.5,
        'ImportScheduled': 0.5, 'ImportInProgress': 1.0}


def call(api_client, method, path, body=None,
         content_type='application/json', accept='application/json, */*'):
    """A raw request; raises ApiException on errors.

    It accepts what client-go (virtctl) accepts.
    """
    request = api_client.param_serialize(
        method=method, resource_path=path, body=body,
        header_params={'Content-Type': content_type, 'Accept': accept},
        auth_settings=['BearerToken'])
    response = api_client.call_api(*request)
    response.read()
    return api_client.response_deserialize(response, {'2XX': 'bytearray'})


def action(custom, name, verb, body=None, plural=VMS, namespace='default'):
    return call(custom.api_client, 'PUT',
                '/apis/subresources.kubevirt.io/v1/namespaces/%s/%s/%s/%s'
                % (namespace, plural, name, verb), body)


def get(custom, name, plural=VMS, namespace='default'):
    try:
        return custom.get_namespaced_custom_object(G, V, namespace, plural,
                                                   name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def create_vm(custom, name, **options):
    return custom.create_namespaced_custom_object(
        G, V, 'default', VMS, objects.make_vm(name, **options))


#: Seconds a VM may take to get there: a start takes well under one, but a
#: loaded machine (two suites side by side) took over 10.
WAIT = 30


def wait_vm(sim, custom, name, predicate, timeout=WAIT):
    """Poll the VM over HTTP until ``predicate(vm)``; return the VM."""
    return sim.wait_for(lambda: (lambda vm: vm if vm and predicate(vm)
                                 else None)(get(custom, name)), timeout)


def wait_printable(sim, custom, name, value, timeout=WAIT):
    return wait_vm(sim, custom, name, lambda vm: vm.get('status', {}).get(
        'printableStatus') == value, timeout)


def wait_running(sim, custom, name):
    vm = wait_printable(sim, custom, name, 'Running')
    return vm, get(custom, name, VMIS)


def crash(sim, name, phase='Failed'):
    """The guest ends by itself (simulated workload)."""
    sim.guest_ends('default', name, phase)


def refused(custom, name, verb, body=None, plural=VMS, code=409):
    with pytest.raises(client.ApiException) as exc:
        action(custom, name, verb, body, plural)
    assert exc.value.status == code
    return apitools.body(exc.value)
