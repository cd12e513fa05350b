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

"""Generations of a tray's DataVolume (pure; no I/O).

Each image inserted into a tray gets a DataVolume of a new name
(:func:`sushy_kubevirt.kubevirt.media.datavolume_name`): the DataVolume
carries its generation (:data:`ANNOTATION`) and the VM the latest one
(:func:`vm_annotation`), recorded in the patch that attaches it. A
running VMI keeps the former DataVolume's PVC until it stops
(``pvc-protection``), and CDI will not import into a name whose PVC
is being deleted: a new name never waits for it.
"""

from sushy_kubevirt.kubevirt import fields

#: DataVolume annotation: the generation it was made for.
ANNOTATION = 'sushy-kubevirt.io/vmedia-generation'


def vm_annotation(device):
    """VM annotation: the generation of ``device``'s latest DataVolume."""
    return 'sushy-kubevirt.io/vmedia-%s-generation' % device.lower()


def _count(text):
    try:
        value = int(text or 0)
    except ValueError:
        return 0
    return value if value > 0 else 0


def generation(vm, device):
    """The generation of the tray's latest DataVolume (0: none recorded)."""
    return _count(fields.annotation(vm, vm_annotation(device)))


def of_datavolume(dv):
    """The generation ``dv`` was made for (0: before generations)."""
    return _count(fields.annotation(dv, ANNOTATION))


def record_ops(vm, device, dv):
    """Ops recording ``dv``'s generation on ``vm`` ([] when recorded)."""
    count = of_datavolume(dv)
    if count == generation(vm, device):
        return []
    return fields.annotation_ops(vm, vm_annotation(device), str(count))
