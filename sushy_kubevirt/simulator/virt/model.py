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

"""KubeVirt object model: resource types, names and pure VM/VMI queries."""

import hashlib
import json

from sushy_kubevirt.simulator import storage

GROUP = 'kubevirt.io'
VERSION = 'v1'
SUBRESOURCES = 'subresources.kubevirt.io/v1'
VM_RT = storage.ResourceType(GROUP, VERSION, 'virtualmachines',
                             'VirtualMachine', short_names=('vm', 'vms'))
# KubeVirt's VMI CRD has no status subresource (the VM's has): virt-handler
# and virt-controller update the whole VMI.
VMI_RT = storage.ResourceType(GROUP, VERSION, 'virtualmachineinstances',
                              'VirtualMachineInstance',
                              status_subresource=False,
                              short_names=('vmi', 'vmis'))
ANN_GENERATION = 'kubevirt.io/vm-generation'
ANN_TEMPLATE_HASH = 'simulator.sushy-kubevirt.io/template-hash'
ANN_GUEST_AGENT = 'simulator.sushy-kubevirt.io/guest-agent'
FINAL = ('Succeeded', 'Failed')
DV_READY = ('Succeeded', 'WaitForFirstConsumer', 'PendingPopulation')


def run_strategy(vm):
    spec = vm.get('spec') or {}
    if spec.get('runStrategy'):
        return spec['runStrategy']
    return 'Always' if spec.get('running') else 'Halted'


def phase_of(obj):
    return (obj.get('status') or {}).get('phase', '') if obj else ''


def is_final(vmi):
    return phase_of(vmi) in FINAL


def deleting(obj):
    return bool(obj and obj['metadata'].get('deletionTimestamp'))


def has_agent(vmi, default):
    """The VMI's guest runs an agent: its annotation, else ``default``."""
    value = (vmi['metadata'].get('annotations') or {}).get(ANN_GUEST_AGENT)
    if value is None:
        return default
    return value.strip().lower() == 'true'


def template_hash(vm):
    spec = ((vm.get('spec') or {}).get('template') or {}).get('spec') or {}
    return hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def dv_names(spec):
    """DataVolume names used by the volumes of a VMI spec."""
    for vol in (spec or {}).get('volumes') or ():
        name = (vol.get('dataVolume') or {}).get('name')
        if name:
            yield name


def first_request(vm):
    reqs = (vm.get('status') or {}).get('stateChangeRequests') or []
    return reqs[0] if reqs else None


def has_stop_request_for(vm, vmi):
    req = first_request(vm)
    return bool(req and vmi and req.get('action') == 'Stop'
                and req.get('uid') == vmi['metadata']['uid'])


def has_start_request(vm):
    req = first_request(vm)
    return bool(req and req.get('action') == 'Start')


def stable_mac(namespace, name, iface):
    """A locally administered unicast MAC derived from the names."""
    digest = hashlib.sha1(
        ('%s/%s/%s' % (namespace, name, iface)).encode()).digest()
    return '02:' + ':'.join('%02x' % b for b in digest[:5])


def stable_ip(namespace, name, iface):
    digest = hashlib.sha1(
        ('ip/%s/%s/%s' % (namespace, name, iface)).encode()).digest()
    return '10.%d.%d.%d' % (128 + digest[0] % 64, digest[1],
                            1 + digest[2] % 254)


def set_running(vm):
    """Start ``vm`` the way virt-api does: ``running`` or ``runStrategy``."""
    _set_run(vm, True, 'Always')


def set_halted(vm):
    _set_run(vm, False, 'Halted')


def _set_run(vm, running, strategy):
    if vm['spec'].get('running') is not None:
        vm['spec']['running'] = running
    else:
        vm['spec']['runStrategy'] = strategy
