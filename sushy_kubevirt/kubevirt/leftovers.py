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

"""What an InsertMedia left behind: orphans, and the fence that stops it.

Pure functions of VMs, DataVolumes and Secrets (no I/O). A tray's
DataVolume or credentials Secret that its VM does not use is an orphan
(an InsertMedia failed between its writes, or its process died). Before
deleting one, :mod:`sushy_kubevirt.drivers.orphans` fences the VM with
:data:`ANNOTATION_COLLECTING` in a patch guarded by its resourceVersion;
the InsertMedia attaching it also patches the VM guarded, so one of the
two sees the other.
"""

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import media

#: VM annotation: the :func:`fence_key` of the tray objects being deleted
#: as orphans. Set (guarded) before the delete, it fences an InsertMedia
#: about to attach them: its guarded patch sees it and stops. It stays
#: (a key of deleted objects fences nothing else) until the next attach.
ANNOTATION_COLLECTING = 'sushy-kubevirt.io/vmedia-collecting'


def orphan(dv, vm):
    """True when ``dv`` is a tray of ``vm`` that ``vm`` does not use.

    Made here for one of its devices (labels, owner uid), not being
    deleted, not the ``Inserted: false`` tray of the VM's latest
    generation (detached on purpose) and named by none of the VM's
    volumes: an InsertMedia that created it and failed before (or while)
    attaching it, or the DataVolume an insert replaced and could not
    delete.
    """
    labels = fields.get(dv, 'metadata', 'labels', default={})
    device = labels.get(media.LABEL_DEVICE)
    name = dv['metadata']['name']
    return (device is not None and media.is_tray(dv, vm, device)
            and media.owner(dv) == (vm['metadata']['name'], media.uid(vm))
            and not fields.get(dv, 'metadata', 'deletionTimestamp')
            and not (fields.annotation(dv, media.ANNOTATION_INSERTED)
                     == 'false'
                     and generations.of_datavolume(dv)
                     == generations.generation(vm, device))
            and not media.uses(vm, name))


def orphan_secret(secret, vm, dv):
    """True when ``secret`` is a tray Secret of ``vm`` that nothing uses.

    Made here (labels, owner uid), not being deleted, its DataVolume
    (``dv``, that of its name, or None) absent or referring to another
    Secret, and that DataVolume's name used by none of the VM's volumes:
    an InsertMedia that failed before (or while) creating the DataVolume,
    or one whose DataVolume was deleted but not its Secret.
    """
    name = secret['metadata']['name']
    device = fields.get(secret, 'metadata', 'labels', default={}).get(
        media.LABEL_DEVICE)
    dv_name = name[:-len(media.SECRET_SUFFIX)]
    return (name.endswith(media.SECRET_SUFFIX) and device is not None
            and media.is_tray(secret, vm, device)
            and media.owner(secret) == (vm['metadata']['name'], media.uid(vm))
            and not fields.get(secret, 'metadata', 'deletionTimestamp')
            and fields.get(dv, 'spec', 'source', 'http', 'secretRef') != name
            and not media.uses(vm, dv_name))


def fence_key(obj):
    """What fences ``obj``'s InsertMedia: its token, else its uid."""
    return fields.annotation(obj, media.ANNOTATION_INSERT) or media.uid(obj)


def collecting(vm):
    """The :func:`fence_key` being collected as an orphan, or None."""
    return fields.annotation(vm, ANNOTATION_COLLECTING)


def fenced(vm, obj):
    """True when ``vm`` fences ``obj`` (its InsertMedia must not attach)."""
    key = collecting(vm)
    return key is not None and key in (
        fields.annotation(obj, media.ANNOTATION_INSERT), media.uid(obj))


def collect_ops(vm, key):
    """Ops fencing ``vm``: the objects of ``key`` are being deleted."""
    if collecting(vm) == key:
        return []
    return fields.annotation_ops(vm, ANNOTATION_COLLECTING, key)


def release_ops(vm):
    """Ops removing a fence left by a past deletion ([] when none)."""
    return fields.remove_annotation_ops(vm, ANNOTATION_COLLECTING)
