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

"""BIOS attributes, their registry, and settings pending until a reboot.

The attributes, their types, allowed values and read-only flags are
:data:`REGISTRY` (served as the Bios' AttributeRegistry). Current values
live in annotation :data:`BIOS_ANNOTATION` (JSON, over the registry's
defaults). A Settings PATCH or ResetBios is stored in
:data:`PENDING_ANNOTATION` as ``{"vmi", "reset", "attributes"}``, with the
uid of the VMI running then (or ''): like a real BIOS, the new values
apply at the next boot. A Redfish start or restart applies them just
before it (:func:`boot_ops`); a boot by other means is seen as a VMI with
another uid (:func:`consumed`): reads show the new values from that
moment, and :func:`apply_pending_ops` folds them into the stored ones.

Password attributes (``SysPassword``) are write-only, as DSP0266 has
them: they read back as null, and their values live in the Secret
:func:`secret_name`, owned by the VM (:func:`secret_body`), never in an
annotation. A value an earlier version stored in an annotation is never
shown; the next write of the BIOS moves it into the Secret
(:func:`clear_text`, :func:`set_bios_ops` rewrites the annotations).

Three attributes are not stored but mirror the VM. ``BootMode``
('Uefi'/'Bios') and ``SecureBootStatus`` ('Enabled'/'Disabled') mirror
the firmware, so they never disagree with BootSourceOverrideMode or
SecureBoot; setting them patches ``domain.firmware`` at once (which
KubeVirt too applies at the next start). Read-only ``NumCores`` is the
VM's vCPU count as KubeVirt counts it (sockets x cores x threads, the
ProcessorSummary's Count).
"""

import base64
import collections
import hashlib
import json

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import inventory
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import refusals

BIOS_ANNOTATION = 'sushy-kubevirt.io/bios'
PENDING_ANNOTATION = 'sushy-kubevirt.io/bios-pending'
REGISTRY_ID = 'KubeVirtBiosAttributeRegistry.v1_0_0'
REGISTRY_VERSION = '1.0.0'
#: Longest String/Password value, and longest value echoed in an error.
MAX_LENGTH = 64
_ECHO = 40
#: What an error shows of a Password value.
HIDDEN = '(hidden)'
#: Longest Secret name (a DNS subdomain).
_MAX_SECRET_NAME = 253

Attribute = collections.namedtuple('Attribute', [
    'name', 'type', 'default', 'display', 'values', 'read_only', 'lower',
    'upper', 'max_length'])


def _attr(name, type_, default, display, values=(), read_only=False,
          lower=None, upper=None, max_length=None):
    return Attribute(name, type_, default, display, tuple(values),
                     read_only, lower, upper, max_length)


#: Every attribute, in registry order.
REGISTRY = (
    _attr('BootMode', 'Enumeration', 'Uefi', 'Boot Mode', ('Uefi', 'Bios')),
    _attr('EmbeddedSata', 'Enumeration', 'Raid', 'Embedded SATA',
          ('Ata', 'Ahci', 'Raid', 'Off')),
    _attr('L2Cache', 'String', '10x256 KB', 'L2 Cache', read_only=True,
          max_length=16),
    _attr('NicBoot1', 'Enumeration', 'NetworkBoot', 'NIC 1 Boot',
          ('NetworkBoot', 'Disabled')),
    _attr('NumCores', 'Integer', 10, 'Number of Cores', read_only=True,
          lower=1, upper=256),
    _attr('ProcTurboMode', 'Enumeration', 'Enabled', 'Turbo Boost',
          ('Enabled', 'Disabled')),
    _attr('QuietBoot', 'Boolean', True, 'Quiet Boot'),
    _attr('SecureBootStatus', 'Enumeration', 'Disabled',
          'Secure Boot Status', ('Enabled', 'Disabled')),
    _attr('SerialNumber', 'String', 'QPX12345', 'Serial Number',
          max_length=16),
    _attr('SysPassword', 'Password', '', 'System Password',
          max_length=MAX_LENGTH),
)
ATTRIBUTES = {a.name: a for a in REGISTRY}
DEFAULT_ATTRIBUTES = {a.name: a.default for a in REGISTRY}
#: Write-only attributes: kept in the Secret, read back as null.
PASSWORDS = tuple(a.name for a in REGISTRY if a.type == 'Password')
_BOOT_MODES = {'Uefi': firmware.UEFI, 'Bios': firmware.LEGACY}
_SECURE = {'Enabled': True, 'Disabled': False}
_DERIVED = ('BootMode', 'SecureBootStatus', 'NumCores')
_STORED_DEFAULTS = {k: v for k, v in DEFAULT_ATTRIBUTES.items()
                    if k not in _DERIVED + PASSWORDS}


class Refused(refusals.InvalidAttributeValue):
    """An attribute value the registry refuses (400).

    ``message_id`` and ``args`` name the Base registry message; ``name``
    is the attribute.
    """

    def __init__(self, message_id, name, *args, detail):
        super().__init__(detail)
        self.message_id = message_id
        self.name = name
        self.message_args = args


class Unknown(refusals.UnknownAttribute):
    """An attribute the registry does not have (400)."""

    message_id = 'PropertyUnknown'

    def __init__(self, name):
        super().__init__('Unknown BIOS attribute %s' % name)
        self.name = name


InvalidAttributeValue = refusals.InvalidAttributeValue
UnknownAttribute = refusals.UnknownAttribute


def _echo(value, attr=None):
    if attr is not None and attr.type == 'Password':
        return HIDDEN
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= _ECHO else text[:_ECHO] + '...'


def _type_error(attr, value, expected):
    return Refused('PropertyValueTypeError', attr.name, _echo(value, attr),
                   detail='BIOS attribute %s takes %s' % (attr.name,
                                                          expected))


def _check_one(attr, value):
    if attr.read_only:
        raise Refused('PropertyNotWritable', attr.name,
                      detail='BIOS attribute %s is read-only' % attr.name)
    if attr.type in ('Enumeration', 'String', 'Password'):
        if not isinstance(value, str):
            raise _type_error(attr, value, 'a string')
    if attr.type == 'Enumeration' and value not in attr.values:
        raise Refused('PropertyValueNotInList', attr.name, _echo(value),
                      detail='BIOS attribute %s takes one of: %s'
                      % (attr.name, ', '.join(attr.values)))
    if attr.type in ('String', 'Password'):
        limit = attr.max_length or MAX_LENGTH
        if len(value) > limit or any(ord(c) < 32 for c in value):
            raise Refused('StringValueTooLong', attr.name,
                          _echo(value, attr), limit,
                          detail='BIOS attribute %s takes at most %d '
                          'printable characters' % (attr.name, limit))
    if attr.type == 'Boolean' and not isinstance(value, bool):
        raise _type_error(attr, value, 'true or false')
    if attr.type == 'Integer':
        if isinstance(value, bool) or not isinstance(value, int):
            raise _type_error(attr, value, 'an integer')
        if not attr.lower <= value <= attr.upper:
            raise Refused('PropertyValueOutOfRange', attr.name, value,
                          detail='BIOS attribute %s takes %d..%d'
                          % (attr.name, attr.lower, attr.upper))


def check(attributes):
    """Raise :class:`Unknown` or :class:`Refused` unless all are valid.

    Checks names, read-only flags, types (no floats: NaN and Infinity
    are refused with them), allowed values, bounds and lengths.
    """
    if not isinstance(attributes, dict) or not attributes:
        raise Refused('PropertyValueTypeError', 'Attributes',
                      _echo(attributes),
                      detail='Attributes must be a non-empty object')
    for name in sorted(attributes):
        if name not in ATTRIBUTES:
            raise Unknown(name)
        _check_one(ATTRIBUTES[name], attributes[name])


def _json(vm, key):
    raw = fields.annotation(vm, key)
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        value = None
    return value if isinstance(value, dict) else None


def _stored(vm):
    stored = dict(_STORED_DEFAULTS)
    for name, value in (_json(vm, BIOS_ANNOTATION) or {}).items():
        if name in stored:
            stored[name] = value
    return stored


def _pending(vm):
    pending = _json(vm, PENDING_ANNOTATION)
    if pending is None:
        return None
    attributes = pending.get('attributes')
    return {'vmi': str(pending.get('vmi') or ''),
            'reset': pending.get('reset') is True,
            'attributes': {k: v for k, v in (attributes or {}).items()
                           if k in _STORED_DEFAULTS}}


def _uid(vmi):
    return fields.get(vmi, 'metadata', 'uid') or ''


def consumed(vm, vmi):
    """True when a boot since the pending change has applied it."""
    pending = _pending(vm)
    return bool(pending and vmi and _uid(vmi) != pending['vmi'])


def _with(stored, pending):
    result = dict(_STORED_DEFAULTS if pending['reset'] else stored)
    result.update(pending['attributes'])
    return result


def _derived(vm, attributes):
    attributes.update(dict.fromkeys(PASSWORDS))
    attributes['BootMode'] = (
        'Uefi' if firmware.boot_mode(vm) == firmware.UEFI else 'Bios')
    attributes['SecureBootStatus'] = (
        'Enabled' if firmware.secure_boot(vm) else 'Disabled')
    attributes['NumCores'] = inventory.total_cpus(vm)
    return attributes


def _folded(vm, vmi):
    """(stored, pending) with a consumed pending change folded in."""
    stored, pending = _stored(vm), _pending(vm)
    if pending and consumed(vm, vmi):
        return _with(stored, pending), None
    return stored, pending


def bios(vm, vmi=None):
    """Current BIOS attributes (a new dict)."""
    return _derived(vm, _folded(vm, vmi)[0])


def settings(vm, vmi=None):
    """The Settings object's attributes: current plus pending changes."""
    stored, pending = _folded(vm, vmi)
    return _derived(vm, _with(stored, pending) if pending else stored)


def pending(vm, vmi=None):
    """True while changes wait for the next boot."""
    return _folded(vm, vmi)[1] is not None


def _ops(vm, stored, pending):
    ops = []
    legacy = _clear_text(vm)
    if stored != _stored(vm) or BIOS_ANNOTATION in legacy:
        ops += fields.annotation_ops(vm, BIOS_ANNOTATION,
                                     json.dumps(stored, sort_keys=True))
    if pending is None:
        ops += fields.remove_annotation_ops(vm, PENDING_ANNOTATION)
    elif pending != _pending(vm) or PENDING_ANNOTATION in legacy:
        ops += fields.annotation_ops(vm, PENDING_ANNOTATION,
                                     json.dumps(pending, sort_keys=True))
    return ops


def _clear_text(vm):
    """{annotation: {name: value}} of Password values found in clear."""
    found = {}
    for key in (BIOS_ANNOTATION, PENDING_ANNOTATION):
        values = _json(vm, key) or {}
        if key == PENDING_ANNOTATION:
            values = values.get('attributes')
            values = values if isinstance(values, dict) else {}
        hits = {k: values[k] for k in PASSWORDS if k in values}
        if hits:
            found[key] = hits
    return found


def clear_text(vm):
    """Password values an earlier version left in the annotations.

    ``{name: value}`` (a pending value over a stored one); strings only.
    """
    result = {}
    for key in (BIOS_ANNOTATION, PENDING_ANNOTATION):
        result.update(_clear_text(vm).get(key, {}))
    return {k: v for k, v in result.items() if isinstance(v, str)}


def passwords(attributes):
    """The Password attributes of a (checked) Settings change."""
    return {k: v for k, v in attributes.items() if k in PASSWORDS}


def secret_name(vm):
    """Name of the Secret of ``vm``'s Password attributes."""
    vm_name = vm['metadata']['name']
    name = vm_name + '-bios'
    if len(name) <= _MAX_SECRET_NAME:
        return name
    tail = '-bios-' + hashlib.sha256(vm_name.encode()).hexdigest()[:10]
    return vm_name[:_MAX_SECRET_NAME - len(tail)].rstrip('-.') + tail


def _b64(text):
    return base64.b64encode(text.encode('utf-8')).decode('ascii')


def secret_body(vm, values):
    """The Secret holding Password ``values``, owned by ``vm``.

    The garbage collector deletes it with the VM.
    """
    return {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
            'metadata': {
                'name': secret_name(vm),
                'namespace': vm['metadata']['namespace'],
                'labels': {media.LABEL_MANAGED_BY: media.MANAGED_BY,
                           media.LABEL_VM: media.label_value(
                               vm['metadata']['name'])},
                'ownerReferences': [media.owner_reference(vm)]},
            'data': {k: _b64(v) for k, v in sorted(values.items())}}


def secret_ops(vm, values):
    """Ops setting ``values`` in an existing Secret owned by ``vm``.

    They fail (``test``) on a Secret another object owns.
    """
    ops = [jsonpatch.test('/metadata/ownerReferences/0/uid',
                          vm['metadata']['uid'])]
    return ops + [jsonpatch.add(jsonpatch.path('data', k), _b64(v))
                  for k, v in sorted(values.items())]


def set_bios_ops(vm, attributes, vmi=None):
    """Ops storing ``attributes`` as pending until the next boot.

    ``vmi`` is the VMI running now, or None. Raises :class:`Unknown` or
    :class:`Refused` (nothing changes). BootMode and SecureBootStatus
    patch the firmware at once; Password attributes are not in the ops
    (they go to the Secret, :func:`secret_body`). [] when nothing
    changes.
    """
    check(attributes)
    ops = []
    view = vm
    if 'BootMode' in attributes:
        ops += firmware.boot_mode_ops(
            vm, _BOOT_MODES[attributes['BootMode']])
        view = jsonpatch.apply(vm, ops)
    if 'SecureBootStatus' in attributes:
        ops += firmware.secure_boot_ops(
            view, _SECURE[attributes['SecureBootStatus']])
    stored, pending = _folded(vm, vmi)
    changes = {k: v for k, v in attributes.items()
               if k not in _DERIVED + PASSWORDS}
    if changes:
        pending = pending or {'reset': False, 'attributes': {}}
        merged = dict(pending['attributes'], **changes)
        if not pending['reset']:
            merged = {k: v for k, v in merged.items() if stored[k] != v}
        pending = ({'vmi': _uid(vmi), 'reset': pending['reset'],
                    'attributes': merged}
                   if merged or pending['reset'] else None)
    return ops + _ops(vm, stored, pending)


def reset_bios_ops(vm, vmi=None):
    """Ops restoring the default attributes at the next boot."""
    stored, _ = _folded(vm, vmi)
    return _ops(vm, stored, {'vmi': _uid(vmi), 'reset': True,
                             'attributes': {}})


def apply_pending_ops(vm, vmi):
    """Ops folding a consumed pending change into the stored values."""
    if not consumed(vm, vmi):
        return []
    return _ops(vm, *_folded(vm, vmi))


def boot_ops(vm):
    """Ops applying the pending change now: a start or restart follows."""
    stored, pending = _stored(vm), _pending(vm)
    if pending is None:
        return []
    return _ops(vm, _with(stored, pending), None)
