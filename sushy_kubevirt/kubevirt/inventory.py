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

"""Inventory: memory, CPUs, processors, NICs and disks of a VM template.

Values come from the VM template (what the next boot gets), so they are
available while the VM is off. Instance types and preferences
(``spec.instancetype``) are not resolved: a VM that takes its CPU or
memory from one reports the template's own values.
"""

import math
import re

from kubernetes import utils

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import refusals

InvalidQuantity = refusals.InvalidQuantity

GIB = 1024 ** 3
#: A MAC address, also its EthernetInterface's id (a guest agent reports
#: what it likes in a VMI's status).
_MAC = re.compile(r'[0-9a-f]{2}(?::[0-9a-f]{2}){5}')
MIB = 1024 ** 2
DEFAULT_BUS = {'disk': 'virtio', 'cdrom': 'sata', 'lun': 'scsi'}


def _decimal(quantity):
    text = str(quantity).strip()
    try:
        if not text or any(c.isspace() for c in text):
            raise ValueError(text)
        return utils.parse_quantity(text)
    except (ValueError, TypeError, ArithmeticError):
        raise refusals.InvalidQuantity(
            'Invalid quantity %r' % (quantity,)) from None


def parse_quantity(quantity):
    """Kubernetes quantity -> int, rounded up (e.g. '1Gi' -> 1073741824).

    ``kubernetes.utils.parse_quantity`` (exact decimals: '1.1Gi' is
    1181116007 after rounding up; '1e9', '1Ei', 'm' fractions and plain
    numbers accepted). Raises InvalidQuantity.
    """
    if isinstance(quantity, bool):
        raise refusals.InvalidQuantity('Invalid quantity %r' % (quantity,))
    if isinstance(quantity, int):
        return quantity
    return int(math.ceil(_decimal(quantity)))


def _guest_memory(vm):
    """Guest memory in bytes; None when unset.

    Source: ``memory.guest``, else resources requests, else limits.
    """
    domain = fields.domain(vm)
    value = (fields.get(domain, 'memory', 'guest')
             or fields.get(domain, 'resources', 'requests', 'memory')
             or fields.get(domain, 'resources', 'limits', 'memory'))
    return None if value is None else parse_quantity(value)


def total_memory_gib(vm):
    """Guest memory in GiB, rounded half up, at least 1; None when unset."""
    value = _guest_memory(vm)
    if value is None:
        return None
    return max(1, int((value + GIB // 2) // GIB))


def memory_mib(vm):
    """Guest memory in MiB, rounded up, at least 1; None when unset."""
    value = _guest_memory(vm)
    if value is None:
        return None
    return max(1, -(-value // MIB))


def _topology(vm):
    """(sockets, cores, threads) of the template CPU.

    Without ``cpu.sockets/cores/threads`` KubeVirt gives one socket with
    as many cores as whole CPUs in resources limits (else requests).
    """
    domain = fields.domain(vm)
    cpu = domain.get('cpu') or {}
    if any(cpu.get(k) for k in ('sockets', 'cores', 'threads')):
        return (cpu.get('sockets') or 1, cpu.get('cores') or 1,
                cpu.get('threads') or 1)
    request = (fields.get(domain, 'resources', 'limits', 'cpu')
               or fields.get(domain, 'resources', 'requests', 'cpu'))
    cores = int(math.ceil(_decimal(request))) if request else 1
    return 1, max(1, cores), 1


def total_cpus(vm):
    """vCPUs: sockets * cores * threads (each defaults to 1)."""
    sockets, cores, threads = _topology(vm)
    return sockets * cores * threads


def processors(vm):
    """One dict per socket for sushy-tools' Processors resource.

    Keys: ``id``/``Id`` 'CPU<n>', ``socket`` 'CPU <n>', ``model``
    (``cpu.model`` or 'N/A'), ``vendor`` 'N/A', ``cores`` per socket,
    ``threads`` = total threads of the socket (Redfish TotalThreads).
    """
    sockets, cores, threads = _topology(vm)
    model = fields.get(fields.domain(vm), 'cpu', 'model', default='N/A')
    return [{'id': 'CPU%d' % n, 'Id': 'CPU%d' % n, 'socket': 'CPU %d' % n,
             'model': model, 'vendor': 'N/A', 'cores': cores,
             'threads': cores * threads} for n in range(sockets)]


def mac(value):
    """``value`` as a lower-case MAC with colons; None if it is none."""
    mac = value.strip().lower().replace('-', ':') \
        if isinstance(value, str) else ''
    return mac if _MAC.fullmatch(mac) else None


def nics(vm, vmi=None):
    """[{'id': mac, 'mac': mac}] in template interface order.

    The MAC is the template's ``macAddress``, else the one the running VMI
    reports in ``status.interfaces`` (matched by name). Interfaces with no
    known MAC (or a value that is no MAC) are left out. MACs are lower
    case with colons.
    """
    reported = {i.get('name'): i.get('mac') for i in
                fields.get(vmi, 'status', 'interfaces', default=[])}
    result = []
    for iface in fields.interfaces(vm):
        found = mac(iface.get('macAddress')
                    or reported.get(iface.get('name')))
        if found:
            result.append({'id': found, 'mac': found})
    return result


def _claim_size(obj):
    """Requested (or, for a PVC, bound) size of a DataVolume/PVC dict."""
    spec = obj.get('spec') or {}
    size = (fields.get(obj, 'status', 'capacity', 'storage')
            if obj.get('kind') == 'PersistentVolumeClaim' else None)
    return (size
            or fields.get(spec, 'storage', 'resources', 'requests',
                          'storage')
            or fields.get(spec, 'pvc', 'resources', 'requests', 'storage')
            or fields.get(spec, 'resources', 'requests', 'storage'))


def pvc_size(pvc):
    """A PVC's size: ``status.capacity`` once bound, else its request.

    A bound claim's capacity is what the volume holds (it may exceed the
    request, and trails a resize until the volume has grown); an unbound
    one has only its request.
    """
    return (fields.get(pvc, 'status', 'capacity', 'storage')
            or fields.get(pvc, 'spec', 'resources', 'requests', 'storage'))


def claims(vm, datavolumes, pvcs=()):
    """``{claim name: size}`` from DataVolume/PVC dicts and templates.

    ``pvcs``: PersistentVolumeClaim dicts (sized by :func:`pvc_size`).
    """
    sizes = {}
    for template in fields.get(vm, 'spec', 'dataVolumeTemplates',
                               default=[]):
        sizes[fields.get(template, 'metadata', 'name')] = _claim_size(
            template)
    for obj in datavolumes or ():
        size = _claim_size(obj)
        if size:
            sizes[fields.get(obj, 'metadata', 'name')] = size
    for pvc in pvcs or ():
        size = pvc_size(pvc)
        if size:
            sizes[fields.get(pvc, 'metadata', 'name')] = size
    return sizes


def simple_storage(disk_list):
    """sushy-tools SimpleStorage dict, one controller per bus.

    ``{bus: {'Id': bus, 'Name': bus, 'DeviceList': [{'Name': disk,
    'CapacityBytes': int}]}}`` from :func:`sushy_kubevirt.kubevirt.disks.
    disks`: the non-optical disks of known size (the stock template cannot
    render an unknown size; the Storage resource lists every disk).
    """
    storage = {}
    for disk in disk_list:
        if disk.kind == 'cdrom' or disk.capacity is None:
            continue
        controller = storage.setdefault(
            disk.bus, {'Id': disk.bus, 'Name': disk.bus, 'DeviceList': []})
        controller['DeviceList'].append(
            {'Name': disk.name, 'CapacityBytes': disk.capacity})
    return storage
