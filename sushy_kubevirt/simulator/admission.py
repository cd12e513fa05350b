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

"""virt-api admission for VirtualMachines and their instances.

Only what this project relies on is modelled: firmware ``uuid``/``serial``
defaulting (random, on creation), ``running``/``runStrategy``
exclusivity, unique boot orders across disks and interfaces and Secure
Boot requiring SMM.  Rejections use
the message format of a denying webhook behind kube-apiserver. A VMI's
status changes only by KubeVirt's own accounts: virt-api's VMI mutator
silently puts back anyone else's (the VMI CRD has no status subresource).
"""

import uuid

from sushy_kubevirt.simulator import apistatus

WEBHOOK = 'virtualmachine-validator.kubevirt.io'
RUN_STRATEGIES = ('Always', 'Halted', 'Manual', 'RerunOnFailure', 'Once')
TEMPLATE = 'spec.template.spec'
#: The users whose VMI status changes virt-api keeps.
KUBEVIRT_ACCOUNTS = frozenset(
    'system:serviceaccount:kubevirt:' + name
    for name in ('kubevirt-apiserver', 'kubevirt-controller',
                 'kubevirt-handler'))


def _cause(field, message, reason='FieldValueInvalid'):
    return {'reason': reason, 'message': message, 'field': field}


def default_vm(vm):
    """Fill an empty firmware uuid and serial in place (mutating webhook).

    Both random, as virt-api's on a VM's creation (KubeVirt v1.9's
    ``setFirmwareDefaultsIfEmpty``); a given one is kept.
    """
    template = vm.get('spec', {}).get('template')
    if not isinstance(template, dict):
        return vm
    domain = template.setdefault('spec', {}).setdefault('domain', {})
    firmware = domain.get('firmware') or {}
    if not firmware.get('uuid'):
        firmware['uuid'] = str(uuid.uuid4())
    if not firmware.get('serial'):
        firmware['serial'] = str(uuid.uuid4())
    domain['firmware'] = firmware
    return vm


def _run_strategy_causes(spec):
    causes = []
    has_running = spec.get('running') is not None
    strategy = spec.get('runStrategy')
    if has_running and strategy is not None:
        causes.append(_cause(
            'spec.running',
            'Running and RunStrategy are mutually exclusive. Note that '
            'Running is deprecated, please use RunStrategy instead'))
    if not has_running and strategy is None:
        causes.append(_cause('spec.running',
                             'RunStrategy must be specified'))
    if strategy is not None and strategy not in RUN_STRATEGIES:
        causes.append(_cause('spec.runStrategy',
                             'Invalid RunStrategy (%s)' % strategy))
    return causes


def _boot_order_causes(devices):
    causes = []
    seen = set()
    for kind in ('disks', 'interfaces'):
        for idx, device in enumerate(devices.get(kind) or []):
            order = device.get('bootOrder')
            if order is None:
                continue
            path = '%s.domain.devices.%s[%d]' % (TEMPLATE, kind, idx)
            field = path + '.bootOrder'
            if not isinstance(order, int) or order < 1:
                causes.append(_cause(
                    field,
                    '%s must have a boot order > 0, if supplied' % path))
                continue
            if order in seen:
                causes.append(_cause(
                    field,
                    'Boot order for %s already set for a different '
                    'device.' % field))
            seen.add(order)
    return causes


def _secure_boot_causes(domain):
    efi = ((domain.get('firmware') or {}).get('bootloader') or {}).get('efi')
    if efi is None or efi.get('secureBoot') is False:
        return []
    smm = (domain.get('features') or {}).get('smm')
    if smm is not None and smm.get('enabled') is not False:
        return []
    field = TEMPLATE + '.domain'
    return [_cause(field, '%s has EFI SecureBoot enabled. SecureBoot '
                          'requires SMM, which is currently disabled.'
                   % field)]


def validate_vm(vm):
    """Return the list of kube StatusCauses for an invalid VM (or [])."""
    spec = vm.get('spec') or {}
    template = spec.get('template')
    if not isinstance(template, dict):
        return [_cause('spec.template', 'missing virtual machine template.',
                       'FieldValueRequired')]
    domain = (template.get('spec') or {}).get('domain') or {}
    causes = _boot_order_causes(domain.get('devices') or {})
    causes += _secure_boot_causes(domain)
    causes += _run_strategy_causes(spec)
    return causes


def denied(causes):
    """The 422 kube-apiserver returns when the webhook denies a request."""
    message = ', '.join(c['message'] for c in causes)
    return apistatus.ApiError(
        422, 'Invalid',
        'admission webhook "%s" denied the request: %s' % (WEBHOOK, message),
        details={'causes': causes})


def mutate_vm(operation, new, old, user):
    """The mutating webhook (``sim.register_admission``).

    It defaults on creation only, as virt-api (updates are left to
    virt-controller).
    """
    if operation == 'CREATE':
        default_vm(new)


def check_vm(operation, new, old, user):
    """The validating webhook, after the schema check."""
    causes = validate_vm(new)
    if causes:
        raise denied(causes)


def vmi_mutator(writers):
    """virt-api's VMI mutator: only KubeVirt's accounts change status.

    ``writers``: more users that count as KubeVirt's.
    """
    allowed = KUBEVIRT_ACCOUNTS | writers

    def mutate_vmi(operation, new, old, user):
        if operation == 'UPDATE' and user not in allowed:
            if 'status' in old:
                new['status'] = old['status']
            else:
                new.pop('status', None)
    return mutate_vmi


def register(sim, vm_rt, vmi_rt):
    sim.register_admission(vm_rt, mutate_vm)
    sim.register_admission(vm_rt, check_vm, validating=True)
    sim.register_admission(vmi_rt, vmi_mutator(sim.kubevirt_users))
