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

"""Disks of a VM template: bus, kind and size, for Storage and SimpleStorage.

Pure: VM, VMI, DataVolume and PVC dicts in, :class:`Disk` tuples out. A
size comes, in this order, from the bound PVC the running VMI reports
(``status.volumeStatus``), a cached DataVolume or the VM's
``dataVolumeTemplates`` request, the cached PVC a
``persistentVolumeClaim`` volume names (its ``status.capacity`` once
bound, else its ``spec.resources.requests``), or an
``emptyDisk``/``hostDisk`` capacity. Anything else (a containerDisk,
cloud-init, a PVC not found) has no known size: ``capacity`` is None and
``source`` says why.
"""

import collections

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import inventory

#: KubeVirt's default bus per disk kind.
DEFAULT_BUS = inventory.DEFAULT_BUS
KINDS = ('disk', 'lun', 'cdrom')
OPTICAL = 'cdrom'

Disk = collections.namedtuple('Disk', ['name', 'bus', 'kind', 'capacity',
                                       'source'])


def _kind(disk):
    for kind in KINDS:
        if kind in disk:
            return kind
    return 'disk'


def _source(volume):
    """The volume's source type, e.g. 'dataVolume' (None: no volume)."""
    for key in sorted(volume or {}):
        if key != 'name':
            return key
    return None


def _pvc_sizes(vmi):
    sizes = {}
    for status in fields.get(vmi, 'status', 'volumeStatus', default=[]):
        size = fields.get(status, 'persistentVolumeClaimInfo', 'capacity',
                          'storage')
        if size:
            sizes[status.get('name')] = size
    return sizes


def _size(volume, claims, bound):
    source = _source(volume)
    name = fields.get(volume, 'name')
    size = bound.get(name)
    if not size and source == 'dataVolume':
        size = claims.get(fields.get(volume, 'dataVolume', 'name'))
    elif not size and source == 'persistentVolumeClaim':
        size = claims.get(fields.get(volume, 'persistentVolumeClaim',
                                     'claimName'))
    elif not size and source in ('emptyDisk', 'hostDisk'):
        size = fields.get(volume, source, 'capacity')
    try:
        return inventory.parse_quantity(size) if size else None
    except inventory.InvalidQuantity:
        return None


def claim_names(vm):
    """The claim names of ``vm``'s ``persistentVolumeClaim`` volumes."""
    return [fields.get(v, 'persistentVolumeClaim', 'claimName')
            for v in fields.volumes(vm)
            if fields.get(v, 'persistentVolumeClaim', 'claimName')]


def disks(vm, datavolumes=None, vmi=None, pvcs=()):
    """:class:`Disk` per template disk, in template order.

    ``datavolumes``: cached DataVolume dicts of the VM's namespace;
    ``vmi``: the running VMI or None; ``pvcs``: the cached PVCs of its
    ``persistentVolumeClaim`` volumes (:func:`claim_names`).
    """
    claims = inventory.claims(vm, datavolumes, pvcs)
    bound = _pvc_sizes(vmi)
    volumes = {v.get('name'): v for v in fields.volumes(vm)}
    result = []
    for disk in fields.disks(vm):
        kind = _kind(disk)
        volume = volumes.get(disk.get('name'))
        bus = fields.get(disk, kind, 'bus', default=DEFAULT_BUS[kind])
        result.append(Disk(disk.get('name'), bus, kind,
                           _size(volume, claims, bound), _source(volume)))
    return result


def buses(disk_list):
    """``{bus: [Disk, ...]}`` in order of first appearance."""
    result = {}
    for disk in disk_list:
        result.setdefault(disk.bus, []).append(disk)
    return result
