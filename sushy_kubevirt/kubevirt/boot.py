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

"""Boot device: bootOrder of disks and interfaces, boot-once annotations.

KubeVirt boots the device with the lowest ``bootOrder``; values must be
unique across all disks and interfaces, and a device without a bootOrder
is never tried once any device has one. So every change renumbers all
devices in one patch: the devices of the target kind first, then every
other device that had a bootOrder, in its previous relative order. A
device that had a bootOrder always keeps one (a PVC-backed root disk
included); when no device had one (KubeVirt's default boot), the root disk
gets one after the targets so it stays bootable.

Kinds: an interface is ``Pxe`` (``UefiHttp`` is treated as ``Pxe``), a
disk with ``cdrom`` is ``Cd``, any other disk (disk, lun) is ``Hdd``.

``Cd`` is accepted with no CD-ROM (no media inserted), as a BMC with an
empty tray does: nothing is reordered, so the boot falls through to the
next device; the target is kept (a Once in :data:`ONCE_ANNOTATION`, a
Continuous in :data:`CD_ANNOTATION`) and reads back as ``Cd``. A CD-ROM
attached while it is kept boots first (:func:`cd_attached_ops`); one
ejected under a pending Once leaves it so (:func:`cd_detached_ops`).

Template changes apply when a VMI is created. KubeVirt has no one-time
boot: ``Once`` stores the original orders and the current VMI uid in the
annotation :data:`ONCE_ANNOTATION`, applies the target order, and
:func:`restore_once_ops` puts the orders back once a VMI with another uid
exists (that boot consumed the override); :func:`cancel_once_ops` puts
them back at once (``BootSourceOverrideEnabled: Disabled``). Either way
the override then reads ``Disabled`` (:data:`DISABLED_ANNOTATION`, as
DSP0266 has a one-time boot end), the target being the restored first
device, until the next Once or Continuous. An in-guest
reboot keeps the VMI - and its old boot order - unless
``spec.template.spec.domain.rebootPolicy: Terminate`` (KubeVirt 1.8+,
feature gate RebootPolicy) makes KubeVirt re-create it; without it the
override is consumed only by a Redfish restart or a power cycle.
"""

import json

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import refusals

NoSuchDevice = refusals.NoSuchDevice
UnsupportedTarget = refusals.UnsupportedTarget

PXE = 'Pxe'
HDD = 'Hdd'
CD = 'Cd'
UEFI_HTTP = 'UefiHttp'
TARGETS = (PXE, HDD, CD, UEFI_HTTP)
ONCE = 'Once'
CONTINUOUS = 'Continuous'
DISABLED = 'Disabled'
ONCE_ANNOTATION = 'sushy-kubevirt.io/boot-once'
#: Present while the override reads Disabled (used or cancelled).
DISABLED_ANNOTATION = 'sushy-kubevirt.io/boot-override-disabled'
#: Present while Continuous Cd is the target of a VM with no CD-ROM.
CD_ANNOTATION = 'sushy-kubevirt.io/boot-cd'


def _kind(section, device):
    if section == 'interfaces':
        return PXE
    return CD if 'cdrom' in device else HDD


def _devices(vm):
    """[(key, kind, index, bootOrder)] for disks then interfaces."""
    result = []
    for section in ('disks', 'interfaces'):
        for index, device in enumerate(
                fields.get(vm, *fields.DEVICES, section, default=[])):
            key = '%s/%s' % (section, device.get('name'))
            result.append((key, _kind(section, device), index,
                           device.get('bootOrder')))
    return result


def _has_cd(devices):
    return any(d[1] == CD for d in devices)


def targets(vm, uefi, media=False):
    """The BootSourceOverrideTarget values ``vm`` has a device for.

    ``UefiHttp`` (a network boot) only in UEFI mode; ``Cd`` also with
    ``media`` (InsertMedia adds the CD-ROM a Cd boot needs; until then a
    Cd boot falls through).
    """
    kinds = {d[1] for d in _devices(vm)} | ({CD} if media else set())
    result = [t for t in (PXE, CD, HDD) if t in kinds]
    if uefi and PXE in kinds:
        result.append(UEFI_HTTP)
    return tuple(result)


def _order(devices):
    """Device keys with a bootOrder, lowest first (ties: list order)."""
    ranked = [(d[3], i, d[0]) for i, d in enumerate(devices)
              if d[3] is not None]
    return [k for _, _, k in sorted(ranked)]


def _root(devices):
    """Key of the root disk: lowest-ordered Hdd disk, else the first one."""
    hdds = [d for d in devices if d[1] == HDD]
    ordered = _order(hdds)
    if ordered:
        return ordered[0]
    return hdds[0][0] if hdds else None


def _normalize(target):
    if target not in TARGETS:
        raise refusals.UnsupportedTarget(
            'Unsupported BootSourceOverrideTarget %r; supported: %s'
            % (target, ', '.join(TARGETS)), target,
            'Boot/BootSourceOverrideTarget')
    return PXE if target == UEFI_HTTP else target


def boot_device(vm):
    """Kind of the device with the lowest bootOrder, or None if none has one.

    With no bootOrder at all KubeVirt uses its default device order; the
    Redfish target is then unknown and None is returned.
    """
    devices = _devices(vm)
    if not _has_cd(devices) and _kept_cd(vm):
        return CD
    order = _order(devices)
    if not order:
        return None
    return {d[0]: d[1] for d in devices}[order[0]]


def _kept_cd(vm):
    """True when Cd is the target kept for a VM with no CD-ROM."""
    once = _once(vm)
    if once is not None:
        return once.get('target') == CD
    return fields.annotation(vm, CD_ANNOTATION) is not None


def _desired(devices, target):
    """Desired key order putting ``target`` devices first."""
    target = _normalize(target)
    current = _order(devices)
    targets = [d[0] for d in devices if d[1] == target]
    if not targets:
        raise refusals.NoSuchDevice(target)
    rank = {k: i for i, k in enumerate(current)}
    targets.sort(key=lambda k: (k not in rank, rank.get(k, 0)))
    others = [k for k in current if k not in targets]
    root = _root(devices)
    if not current and root is not None and root not in targets:
        others.append(root)
    return targets + others


def _orders_ops(devices, wanted):
    """Ops giving each device ``wanted[key]`` (None: no bootOrder)."""
    ops = []
    for key, _, index, old in devices:
        new = wanted.get(key)
        if new == old:
            continue
        path = jsonpatch.path(*fields.DEVICES, key.split('/')[0], index,
                              'bootOrder')
        if new is None:
            ops.append(jsonpatch.remove(path))
        elif old is None:
            ops.append(jsonpatch.add(path, new))
        else:
            ops.append(jsonpatch.replace(path, new))
    return ops


def _numbered(order):
    return {key: number for number, key in enumerate(order, 1)}


def _plan(devices, target):
    """{key: bootOrder} putting target first (current values if in place).

    Cd with no CD-ROM changes nothing: the boot falls through.
    """
    if _normalize(target) == CD and not _has_cd(devices):
        return {d[0]: d[3] for d in devices}
    wanted = _desired(devices, target)
    values = [d[3] for d in devices if d[3] is not None]
    if wanted == _order(devices) and len(set(values)) == len(values):
        return {d[0]: d[3] for d in devices}
    return _numbered(wanted)


def boot_device_ops(vm, target):
    """Ops making ``target`` the first boot device ([] if already so).

    Raises UnsupportedTarget for a target other than Pxe/Hdd/Cd/UefiHttp
    and NoSuchDevice when the VM has no device of that kind. Does not touch
    a pending boot-once annotation (see :func:`continuous_ops`).
    """
    devices = _devices(vm)
    return _orders_ops(devices, _plan(devices, target))


def _once(vm):
    raw = fields.annotation(vm, ONCE_ANNOTATION)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def override_enabled(vm):
    """'Once', 'Disabled' or 'Continuous'.

    'Once' while a boot-once override is pending, 'Disabled' once it was
    used or cancelled (until the next override), else 'Continuous'.
    """
    if _once(vm) is not None:
        return ONCE
    if fields.annotation(vm, DISABLED_ANNOTATION) is not None:
        return DISABLED
    return CONTINUOUS


def _original(vm, devices):
    """Devices with the orders saved by a pending Once (else current)."""
    saved = (_once(vm) or {}).get('orders')
    if not isinstance(saved, dict):
        return devices
    return [(k, kind, i, saved.get(k) if k in saved else old)
            for k, kind, i, old in devices]


def boot_once_ops(vm, target, vmi_uid):
    """Ops booting ``target`` once, from the next VMI on.

    Saves the original per-device orders (those saved by an already
    pending Once, so repeated calls never save an override as original)
    and ``vmi_uid`` - the uid of the current VMI, live or final, or None -
    in :data:`ONCE_ANNOTATION` as JSON ``{"target", "vmi", "orders"}``.
    """
    devices = _devices(vm)
    original = _original(vm, devices)
    plan = _plan(original, target)
    value = json.dumps({'target': _normalize(target), 'vmi': vmi_uid or '',
                        'orders': {d[0]: d[3] for d in original}},
                       sort_keys=True)
    return (_orders_ops(devices, plan)
            + fields.annotation_ops(vm, ONCE_ANNOTATION, value)
            + fields.remove_annotation_ops(vm, DISABLED_ANNOTATION))


def continuous_ops(vm, target):
    """Ops making ``target`` the persistent boot device.

    Clears a pending Once: the new order is computed from the saved
    original orders, and the annotation is removed.
    """
    devices = _devices(vm)
    plan = _plan(_original(vm, devices), target)
    if _normalize(target) == CD and not _has_cd(devices):
        kept = fields.annotation_ops(vm, CD_ANNOTATION, CONTINUOUS)
    else:
        kept = fields.remove_annotation_ops(vm, CD_ANNOTATION)
    return (_orders_ops(devices, plan) + kept
            + fields.remove_annotation_ops(vm, ONCE_ANNOTATION)
            + fields.remove_annotation_ops(vm, DISABLED_ANNOTATION))


def cd_attached_ops(before, vm):
    """Ops after a CD-ROM was added (``before`` had none; ``vm`` has it).

    When ``before`` kept Cd as its target, the CD-ROM boots first now
    (a pending Once stays pending) and :data:`CD_ANNOTATION` goes.
    """
    if boot_device(before) != CD or _has_cd(_devices(before)):
        return []
    devices = _devices(vm)
    return (_orders_ops(devices, _numbered(_desired(devices, CD)))
            + fields.remove_annotation_ops(vm, CD_ANNOTATION))


def once_consumed(vm, vmi):
    """True when a pending Once was used by a VMI created after it."""
    once = _once(vm)
    if once is None or vmi is None:
        return False
    uid = fields.get(vmi, 'metadata', 'uid')
    return bool(uid) and uid != once.get('vmi')


def restore_once_ops(vm, vmi):
    """Ops restoring the orders saved by a consumed Once ([] otherwise).

    Devices added since the override keep their bootOrder; if that
    collides with a restored value, all ordered devices are renumbered in
    the restored order (restored devices before new ones on ties). The
    annotation is removed. Restoring while the VMI runs makes the VM show
    RestartRequired until its next restart (the running VMI keeps the
    Once order).
    """
    if not once_consumed(vm, vmi):
        return []
    return cancel_once_ops(vm)


def _restored(vm, devices):
    """{key: bootOrder} of ``devices`` with the orders a pending Once saved.

    Renumbered as in :func:`restore_once_ops` on a collision.
    """
    original = _original(vm, devices)
    saved = (_once(vm) or {}).get('orders') or {}
    ranked = sorted((d[3], d[0] not in saved, i, d[0])
                    for i, d in enumerate(original) if d[3] is not None)
    values = [r[0] for r in ranked]
    if len(set(values)) == len(values):
        return {d[0]: d[3] for d in original}
    return _numbered([r[3] for r in ranked])


def cancel_once_ops(vm):
    """Ops disabling the override ([] when it reads Disabled already).

    ``BootSourceOverrideEnabled: Disabled``: the orders a pending Once
    saved come back (renumbered as in :func:`restore_once_ops`), whether
    or not a boot used the override, and :data:`DISABLED_ANNOTATION`
    replaces its annotation. Without a pending Once the boot order stays.
    """
    disabled = fields.annotation_ops(vm, DISABLED_ANNOTATION, DISABLED)
    if _once(vm) is None:
        return disabled
    devices = _devices(vm)
    return (_orders_ops(devices, _restored(vm, devices))
            + fields.remove_annotation_ops(vm, ONCE_ANNOTATION) + disabled)


def cd_detached_ops(vm, disk):
    """Ops before CD-ROM ``disk`` goes from ``vm``, which boots from Cd.

    A pending Once stays, as one set with no CD-ROM (:func:`_plan`): with
    no CD-ROM left the other devices get back the orders it saved, so
    that boot falls through to the usual order, and a CD-ROM attached
    before it boots first (:func:`cd_attached_ops`). Otherwise Hdd
    becomes the boot device, as sushy-tools' libvirt driver makes it on
    eject. Raises NoSuchDevice when Hdd is needed and the VM has no disk.
    """
    if (_once(vm) or {}).get('target') != CD:
        return boot_device_ops(vm, HDD)
    devices = [d for d in _devices(vm) if d[0] != 'disks/%s' % disk]
    if _has_cd(devices):
        return []
    return _orders_ops(devices, _restored(vm, devices))
