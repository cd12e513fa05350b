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

"""Changes the running VMI has not taken yet (pure; no I/O).

virt-controller flags a template change with ``RestartRequired`` only
once it has synced the VM; a reset that comes first must not miss it. The
VM's template is compared with the VMI's spec on what a boot uses: the
disks (CD-ROM or not) with their boot orders, the interfaces that have
one, the volumes' sources and the firmware; BIOS settings and a BIOS
firmware update are pending until a new VMI takes them. What KubeVirt
defaults on the VMI (disk bus, ``efi.secureBoot``, the pod network's
interface) is left out.
"""

from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import firmwareupdate

#: Keys naming a volume's source (DataVolume, PVC, container image).
_SOURCE_KEYS = ('name', 'claimName', 'image')


def _as_vm(vmi):
    """The VMI's spec in a VM's shape, for the VM readers."""
    return {'spec': {'template': {'spec': fields.get(
        vmi, 'spec', default={})}}}


def _source(volume):
    kinds = sorted(k for k in volume if k != 'name')
    if not kinds:
        return None
    ref = volume[kinds[0]] if isinstance(volume[kinds[0]], dict) else {}
    return (kinds[0],) + tuple(ref.get(k) for k in _SOURCE_KEYS)


def boot_facts(vm):
    """What a boot of ``vm``'s template uses (comparable)."""
    disks = sorted((d.get('name'), 'cdrom' in d, d.get('bootOrder'))
                   for d in fields.disks(vm))
    nics = sorted((i.get('name'), i['bootOrder'])
                  for i in fields.get(vm, *fields.DEVICES, 'interfaces',
                                      default=[])
                  if i.get('bootOrder') is not None)
    volumes = sorted((v.get('name'), _source(v)) for v in fields.volumes(vm))
    return (disks, nics, volumes, firmware.boot_mode(vm),
            firmware.secure_boot(vm))


def restart_pending(vm, vmi):
    """True when only a new VMI applies what ``vm`` asks for.

    RestartRequired, pending BIOS settings or BIOS firmware, or a
    template whose boot facts differ from the VMI's. False without a VMI
    spec to compare.
    """
    if firmware.restart_required(vm) or bios.pending(vm, vmi) or \
            firmwareupdate.pending(vm, vmi):
        return True
    if not fields.get(vmi, 'spec', 'domain'):
        return False
    return boot_facts(vm) != boot_facts(_as_vm(vmi))
