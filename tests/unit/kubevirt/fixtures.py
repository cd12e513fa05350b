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

"""VM / VMI dict builders for the model tests (shaped like API objects)."""

import copy


def disk(name, order=None, kind='disk', bus=None):
    device = {'name': name, kind: {'bus': bus} if bus else {}}
    if order is not None:
        device['bootOrder'] = order
    return device


def nic(name, order=None, mac=None):
    device = {'name': name, 'bridge': {}}
    if order is not None:
        device['bootOrder'] = order
    if mac:
        device['macAddress'] = mac
    return device


def vm(name='node-0', namespace='lab', disks=(), interfaces=(),
       strategy='Halted', domain=None, status=None, annotations=None,
       volumes=(), templates=(), created='2024-01-01T00:00:00Z', **spec):
    """A VirtualMachine dict; ``strategy=None`` leaves runStrategy out."""
    dom = {'devices': {'disks': list(disks),
                       'interfaces': list(interfaces)}}
    dom.update(copy.deepcopy(domain or {}))
    obj = {
        'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
        'metadata': {'name': name, 'namespace': namespace,
                     'uid': 'vm-uid-' + name, 'resourceVersion': '7',
                     'creationTimestamp': created},
        'spec': {'template': {'spec': {'domain': dom,
                                       'volumes': list(volumes)}},
                 'dataVolumeTemplates': list(templates)},
        'status': dict(status or {}),
    }
    if strategy is not None:
        obj['spec']['runStrategy'] = strategy
    obj['spec'].update(spec)
    if annotations is not None:
        obj['metadata']['annotations'] = dict(annotations)
    return obj


def vmi(phase='Running', uid='vmi-1', conditions=(), deleting=False,
        grace=None, interfaces=(), domain=None, spec=None):
    """A VMI dict; ``spec`` (e.g. a VM's template spec) is copied."""
    obj = {'metadata': {'name': 'node-0', 'namespace': 'lab', 'uid': uid},
           'spec': copy.deepcopy(spec or {}),
           'status': {'phase': phase,
                      'conditions': [{'type': c, 'status': 'True'}
                                     for c in conditions],
                      'interfaces': list(interfaces)}}
    if deleting:
        obj['metadata']['deletionTimestamp'] = '2024-01-01T00:00:01Z'
    if grace is not None:
        obj['spec']['terminationGracePeriodSeconds'] = grace
    if domain is not None:
        obj['spec']['domain'] = copy.deepcopy(domain)
    return obj


def orders(obj):
    """{'disks/<name>' | 'interfaces/<name>': bootOrder or None}."""
    dev = obj['spec']['template']['spec']['domain']['devices']
    return {'%s/%s' % (section, d['name']): d.get('bootOrder')
            for section in ('disks', 'interfaces')
            for d in dev.get(section, [])}
