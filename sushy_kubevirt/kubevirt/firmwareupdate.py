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
"""Firmware updates of a VM: its task record and its versions (pure).

A SimpleUpdate of a VM's BIOS or BMC is one task, recorded on the VM in
annotation :data:`TASK_ANNOTATION` (JSON, :func:`new_task_ops`): the
component, the image URL (never its credentials), the version it brings,
its state (``New``, ``Running``, ``Completed``, ``Exception``), its start
and end times and, for an Exception, the reason. A VM keeps its latest
task only. A task left New, or Running, for longer than its ``bound``
seconds (the image check's own limit plus a margin) since it was
accepted, or began to run, reads as an Exception ("interrupted"): the
process that ran it stopped.

A System target means the component the image names
(:func:`component_of`: the BMC when its file name holds ``bmc``, else
the BIOS). The version an image brings is :func:`version_of` its URL:
the first dotted number (two or more numbers joined by dots) of the
URL's last path segment, e.g. ``bios-2.1.0.bin`` gives ``2.1.0``;
without one, ``sha-`` and the first 8 hex digits of the SHA-256 of the
URL (without credentials).

Versions live in annotation :data:`VERSIONS_ANNOTATION`
(``BiosVersion``, and the Manager's ``FirmwareVersion``). A BIOS update
applies at the first start after it was accepted, once it has completed,
as pending BIOS settings do: the task records the uid of the VMI running
when it was accepted (or ''); on completion annotation
:data:`PENDING_ANNOTATION` holds the new version and that uid. A VMI of
another uid shows it at once (a restart while the image was checked
counts, as Ironic restarts a node once the task runs), and
:func:`apply_pending_ops` folds it in; a Redfish start or restart folds
it in first (:func:`boot_ops`). A BMC update is current once completed
(the BMC restarts itself).
"""

import hashlib
import json
import re
from urllib import parse as urlparse

from sushy_kubevirt.kubevirt import fields

TASK_ANNOTATION = 'sushy-kubevirt.io/firmware-task'
PENDING_ANNOTATION = 'sushy-kubevirt.io/firmware-pending'
VERSIONS_ANNOTATION = 'sushy-kubevirt.io/versions'
BIOS = 'BIOS'
BMC = 'BMC'
#: Component -> its key in the versions annotation.
KEYS = {BIOS: 'BiosVersion', BMC: 'FirmwareVersion'}
#: Versions of a VM never updated (sushy-tools' own defaults).
DEFAULTS = {'BiosVersion': '1.0.0', 'FirmwareVersion': '1.00'}
NEW, RUNNING, COMPLETED, EXCEPTION = 'New', 'Running', 'Completed', \
    'Exception'
FINISHED = (COMPLETED, EXCEPTION)
INTERRUPTED = 'interrupted: the service stopped before the image check ' \
    'ended; submit the update again'
_DOTTED = re.compile(r'\d+(?:\.\d+)+')
_MAX_VERSION = 32


def version_of(url):
    """The version image ``url`` (without credentials) brings."""
    found = _DOTTED.search(_file_name(url))
    if found and len(found.group()) <= _MAX_VERSION:
        return found.group()
    return 'sha-' + hashlib.sha256(url.encode('utf-8')).hexdigest()[:8]


def _file_name(url):
    return urlparse.unquote(
        urlparse.urlsplit(url).path.rstrip('/').rpartition('/')[2])


def component_of(url):
    """The component image ``url`` is for, when its target is a System.

    A real firmware package says which device it updates; here its file
    name does: :data:`BMC` when it holds ``bmc`` (any case), else
    :data:`BIOS`.
    """
    return BMC if 'bmc' in _file_name(url).lower() else BIOS


def _json(vm, key):
    raw = fields.annotation(vm, key)
    try:
        value = json.loads(raw) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _uid(vmi):
    return (fields.get(vmi, 'metadata', 'uid') or '') if vmi else ''


def task(vm):
    """The VM's task record (a dict), or None."""
    record = _json(vm, TASK_ANNOTATION)
    if record is None or not isinstance(record.get('n'), int):
        return None
    return record


def shown(record, now):
    """``record`` as readers see it at ``now`` (epoch seconds).

    Unfinished ``bound`` seconds after it started (or, Running, after it
    began to run): an Exception, interrupted.
    """
    until = (record.get('running') or record.get('start') or 0) + \
        (record.get('bound') or 0)
    if record['state'] in FINISHED or now <= until:
        return record
    return dict(record, state=EXCEPTION, reason=INTERRUPTED, end=until)


def busy(vm, now):
    """True while the VM's task is unfinished (and within its bound)."""
    record = task(vm)
    return record is not None and shown(record, now)['state'] not in \
        FINISHED


def new_task_ops(vm, component, image, now, bound, vmi=None):
    """Ops recording a New task of ``component`` for image URL ``image``.

    ``vmi``: the VMI running now, or None. The task number follows the
    previous one's.
    """
    previous = task(vm)
    record = {'n': previous['n'] + 1 if previous else 1,
              'component': component, 'image': image,
              'version': version_of(image), 'state': NEW, 'start': now,
              'bound': bound, 'end': None, 'reason': None,
              'vmi': _uid(vmi)}
    return fields.annotation_ops(vm, TASK_ANNOTATION,
                                 json.dumps(record, sort_keys=True))


def _ours(vm, n):
    record = task(vm)
    if record is None or record['n'] != n or record['state'] in FINISHED:
        return None
    return record


def running_ops(vm, n, now):
    """Ops moving task ``n`` to Running ([] when it is not current)."""
    record = _ours(vm, n)
    if record is None or record['state'] != NEW:
        return []
    return fields.annotation_ops(vm, TASK_ANNOTATION, json.dumps(
        dict(record, state=RUNNING, running=now), sort_keys=True))


def outcome_ops(vm, n, now, reason=None):
    """Ops ending task ``n``: Completed, or Exception with ``reason``.

    Completed records the version: pending until the first start since
    the task was accepted for the BIOS, current for the BMC. [] when task
    ``n`` is no longer the VM's current one.
    """
    record = _ours(vm, n)
    if record is None:
        return []
    state = EXCEPTION if reason else COMPLETED
    ops = fields.annotation_ops(vm, TASK_ANNOTATION, json.dumps(
        dict(record, state=state, end=now, reason=reason), sort_keys=True))
    if reason:
        return ops
    if record['component'] == BMC:
        return ops + _versions_ops(vm, dict(
            _stored(vm), FirmwareVersion=record['version']))
    pending = {'vmi': str(record.get('vmi') or ''),
               'BiosVersion': record['version']}
    return ops + fields.annotation_ops(vm, PENDING_ANNOTATION,
                                       json.dumps(pending, sort_keys=True))


def _stored(vm):
    stored = dict(DEFAULTS)
    for key, value in (_json(vm, VERSIONS_ANNOTATION) or {}).items():
        if key in stored and isinstance(value, str):
            stored[key] = value
    return stored


def _pending(vm):
    pending = _json(vm, PENDING_ANNOTATION)
    if pending is None or not isinstance(pending.get('BiosVersion'), str):
        return None
    return pending


def _versions_ops(vm, versions):
    return fields.annotation_ops(vm, VERSIONS_ANNOTATION,
                                 json.dumps(versions, sort_keys=True))


def consumed(vm, vmi):
    """True when a boot since the BIOS update completed has applied it."""
    pending = _pending(vm)
    return bool(pending and vmi and _uid(vmi) != str(pending.get('vmi')))


def pending(vm, vmi=None):
    """True while a completed BIOS update waits for the next start."""
    return _pending(vm) is not None and not consumed(vm, vmi)


def versions(vm, vmi=None):
    """``{'BiosVersion': ..., 'FirmwareVersion': ...}`` now."""
    result = _stored(vm)
    if consumed(vm, vmi):
        result['BiosVersion'] = _pending(vm)['BiosVersion']
    return result


def boot_ops(vm):
    """Ops making a pending BIOS version current: a start follows."""
    pending_ = _pending(vm)
    if pending_ is None:
        return []
    return _versions_ops(vm, dict(
        _stored(vm), BiosVersion=pending_['BiosVersion'])) + \
        fields.remove_annotation_ops(vm, PENDING_ANNOTATION)


def apply_pending_ops(vm, vmi):
    """Ops folding a BIOS version a boot consumed into the stored ones."""
    return boot_ops(vm) if consumed(vm, vmi) else []
