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

"""Virtual media as CDI DataVolumes attached as a dedicated CD-ROM.

Pure functions of VM and DataVolume dicts: names, object bodies, JSON-patch
operations and the Redfish view of a tray. No I/O, no clock.

One tray per VM and device. Its DataVolume (and Secret, when the image
needs credentials) carry :data:`LABEL_VM` / :data:`LABEL_DEVICE`, are owned
by the VM, are named by :func:`datavolume_name` and carry the token of
the InsertMedia that made them (:data:`ANNOTATION_INSERT`); the VM
template holds a ``cdrom`` disk and a ``dataVolume`` volume both named
:func:`disk_name`. Each new image gets a new name: the VM counts them
(:mod:`sushy_kubevirt.kubevirt.generations`), so a new DataVolume never
waits for the PVC of the last one, which a running VMI keeps
(``pvc-protection``). Orphans are :mod:`sushy_kubevirt.kubevirt.leftovers`.
"""

import base64
import collections
import hashlib
import posixpath
from urllib import parse as urlparse

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import imports
from sushy_kubevirt.kubevirt import jsonpatch

#: DataVolume annotation asking CDI to bind (and import) at once even on a
#: WaitForFirstConsumer storage class.
IMMEDIATE_BIND = 'cdi.kubevirt.io/storage.bind.immediate.requested'
LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'sushy-kubevirt'
LABEL_VM = 'sushy-kubevirt.io/vm'
LABEL_DEVICE = 'sushy-kubevirt.io/vmedia-device'
#: DataVolume annotation: the InsertMedia ``Inserted`` flag ("false" keeps
#: the image imported but the tray empty).
ANNOTATION_INSERTED = 'sushy-kubevirt.io/vmedia-inserted'
#: DataVolume annotation: the InsertMedia ``UserName`` (shown as
#: ``UserName``; the password stays in the Secret).
ANNOTATION_USERNAME = 'sushy-kubevirt.io/vmedia-username'
#: DataVolume and Secret annotation: the token of the InsertMedia that
#: made them (one per request), so that it knows them when the API
#: server's answer to their create was lost.
ANNOTATION_INSERT = 'sushy-kubevirt.io/vmedia-insert'
#: Longest name produced here: a DNS-1123 label, so the DataVolume's PVC
#: and importer pod names and labels derived from it stay valid.
MAX_NAME = 63
MIB = 1024 ** 2

SUCCEEDED = imports.SUCCEEDED
FAILED = imports.FAILED

MediaState = collections.namedtuple(
    'MediaState',
    ['image', 'image_name', 'inserted', 'write_protected', 'progress',
     'error'])

EMPTY = MediaState('', '', False, True, None, None)


def _digest(*parts):
    text = '/'.join(parts)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]


def fit(prefix, suffix, key):
    """``prefix + suffix`` or, when too long, a shortened prefix + hash."""
    name = prefix + suffix
    if len(name) <= MAX_NAME:
        return name
    tail = '%s-%s' % (suffix, _digest(*key))
    return prefix[:MAX_NAME - len(tail)].rstrip('-.') + tail


def disk_name(device):
    """Name of the CD-ROM disk and its volume in the VM template."""
    return 'sushy-vmedia-%s' % device.lower()


def _foreign_datavolumes(vm):
    """Names of DataVolumes the VM uses that are not a media tray."""
    names = {fields.get(t, 'metadata', 'name')
             for t in fields.get(vm, 'spec', 'dataVolumeTemplates',
                                 default=[])}
    for volume in fields.volumes(vm):
        if not volume.get('name', '').startswith('sushy-vmedia-'):
            names.add(fields.get(volume, 'dataVolume', 'name'))
    names.discard(None)
    return names


def datavolume_name(vm, device, generation_=None):
    """Deterministic DataVolume name for ``device`` of ``vm``.

    ``<vm>-vmedia-<device>`` for generation 0 (the name before
    generations), ``<vm>-vmedia-<device>-<n>`` for generation ``n``
    (default: the VM's, :func:`generations.generation`), shortened with
    a hash of the VM name, device and generation when longer than
    :data:`MAX_NAME`, and hashed as well in the unlikely case the VM
    already uses a DataVolume of that name (a root disk must never be
    mistaken for a tray).
    """
    if generation_ is None:
        generation_ = generations.generation(vm, device)
    vm_name = vm['metadata']['name']
    suffix = '-vmedia-%s' % device.lower()
    key = (vm_name, device)
    if generation_:
        suffix += '-%d' % generation_
        key += (str(generation_),)
    name = fit(vm_name, suffix, key)
    if name in _foreign_datavolumes(vm):
        tail = '%s-%s' % (suffix, _digest(*key, 'tray'))
        name = vm_name[:MAX_NAME - len(tail)].rstrip('-.') + tail
    return name


def tray_datavolume_name(vm, device):
    """The tray's DataVolume: the attached one, else the latest made."""
    return attached_datavolume(vm, device) or datavolume_name(vm, device)


SECRET_SUFFIX = '-auth'


def secret_name(dv_name):
    """Name of the Secret holding the image credentials of ``dv_name``."""
    return dv_name + SECRET_SUFFIX


def label_value(text):
    """A valid label value for ``text`` (hashed when too long)."""
    if len(text) <= MAX_NAME:
        return text
    return text[:MAX_NAME - 11].rstrip('-._') + '-' + _digest(text)


def labels(vm, device):
    """Labels naming the VM and the device on every object of a tray."""
    return {LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_VM: label_value(vm['metadata']['name']),
            LABEL_DEVICE: device.lower()}


def owner_reference(vm):
    """Owner reference to the VM, so deleting the VM deletes the tray.

    ``blockOwnerDeletion`` is left unset: setting it needs the right to
    update the VM's finalizers, which the driver's role does not grant.
    """
    return {'apiVersion': vm.get('apiVersion', 'kubevirt.io/v1'),
            'kind': vm.get('kind', 'VirtualMachine'),
            'name': vm['metadata']['name'],
            'uid': vm['metadata']['uid']}


def metadata(vm, device, name, token):
    """Metadata of a tray object: labels, owner, the insert's token."""
    meta = {'name': name,
            'namespace': vm['metadata'].get('namespace'),
            'labels': labels(vm, device),
            'ownerReferences': [owner_reference(vm)]}
    if token:
        meta['annotations'] = {ANNOTATION_INSERT: token}
    return meta


def _b64(text):
    return base64.b64encode(text.encode('utf-8')).decode('ascii')


def secret_body(vm, device, dv_name, username, password, token=None):
    """Secret in the format CDI's http ``secretRef`` expects.

    ``token``: the InsertMedia's (:data:`ANNOTATION_INSERT`).
    """
    return {'apiVersion': 'v1',
            'kind': 'Secret',
            'metadata': metadata(vm, device, secret_name(dv_name), token),
            'type': 'Opaque',
            'data': {'accessKeyId': _b64(username),
                     'secretKey': _b64(password)}}


def quantity(size_bytes, margin):
    """Storage request for an image of ``size_bytes`` plus ``margin``.

    ``margin`` is a fraction (0.1 = 10 %) covering CDI's filesystem
    overhead; the result is rounded up to whole MiB (``"<n>Mi"``).
    """
    total = size_bytes + round(size_bytes * margin)
    return '%dMi' % max(1, -(-total // MIB))


def image_name(url):
    """``ImageName``: the last path segment of the URL (or the host)."""
    parsed = urlparse.urlsplit(url or '')
    return (posixpath.basename(urlparse.unquote(parsed.path))
            or parsed.hostname or '')


def datavolume_body(vm, device, url, *, size_bytes=None, margin=0.1,
                    default_size='10Gi', storage_class=None,
                    volume_mode=None, secret=None, cert_configmap=None,
                    insecure=False, inserted=True, username=None,
                    token=None, generation_=0):
    """DataVolume importing ``url`` for ``device`` of ``vm``.

    The storage request is the image size plus ``margin`` when the size is
    known, else ``default_size``. ``secret`` names a Secret made by
    :func:`secret_body` (``username`` is then recorded for display);
    ``cert_configmap`` a ConfigMap with the CA bundle CDI uses to verify
    an https server, ``insecure`` skips its verification
    (``insecureSkipVerify``; both only for an https URL); ``token`` is
    the InsertMedia's
    (:data:`ANNOTATION_INSERT`); ``generation_`` names it
    (:func:`datavolume_name`).
    """
    name = datavolume_name(vm, device, generation_)
    meta = metadata(vm, device, name, token)
    meta.setdefault('annotations', {})[IMMEDIATE_BIND] = 'true'
    if generation_:
        meta['annotations'][generations.ANNOTATION] = str(
            generation_)
    if not inserted:
        meta['annotations'][ANNOTATION_INSERTED] = 'false'
    http = {'url': url}
    if secret:
        http['secretRef'] = secret
        meta['annotations'][ANNOTATION_USERNAME] = username or ''
    if url.lower().startswith('https:'):
        if insecure:
            http['insecureSkipVerify'] = True
        elif cert_configmap:
            http['certConfigMap'] = cert_configmap
    request = (quantity(size_bytes, margin) if size_bytes
               else default_size)
    storage = {'resources': {'requests': {'storage': request}}}
    if storage_class:
        storage['storageClassName'] = storage_class
    if volume_mode:
        storage['volumeMode'] = volume_mode
    return {'apiVersion': 'cdi.kubevirt.io/v1beta1',
            'kind': 'DataVolume',
            'metadata': meta,
            'spec': {'source': {'http': http}, 'storage': storage}}


def tls_source(dv):
    """``(certConfigMap, insecureSkipVerify)`` of a DataVolume's source."""
    http = fields.get(dv, 'spec', 'source', 'http', default={})
    return http.get('certConfigMap'), bool(http.get('insecureSkipVerify'))


def is_tray(dv, vm, device):
    """True when ``dv`` was made by this module for ``device`` of ``vm``."""
    found = fields.get(dv, 'metadata', 'labels', default={})
    return (found.get(LABEL_MANAGED_BY) == MANAGED_BY
            and found.get(LABEL_DEVICE) == device.lower()
            and found.get(LABEL_VM) == label_value(vm['metadata']['name']))


def uid(obj):
    return fields.get(obj, 'metadata', 'uid')


def owner(dv):
    """``(name, uid)`` of the VirtualMachine owning ``dv``, or None."""
    for ref in fields.get(dv, 'metadata', 'ownerReferences', default=[]):
        if ref.get('kind') == 'VirtualMachine':
            return ref.get('name'), ref.get('uid')
    return None


def uses(vm, dv_name):
    """True when a volume or DataVolume template of ``vm`` names it."""
    return dv_name in ({fields.get(v, 'dataVolume', 'name')
                        for v in fields.volumes(vm)}
                       | {fields.get(t, 'metadata', 'name')
                          for t in fields.get(vm, 'spec',
                                              'dataVolumeTemplates',
                                              default=[])})


def made_by(obj, token):
    """True when ``obj`` was made by the InsertMedia of ``token``."""
    return token is not None and \
        fields.annotation(obj, ANNOTATION_INSERT) == token


def source_url(dv):
    """The http(s) URL a DataVolume imports ('' when none)."""
    return fields.get(dv, 'spec', 'source', 'http', 'url', default='')


def _index(items, name):
    for index, item in enumerate(items):
        if item.get('name') == name:
            return index
    return None


def attached_datavolume(vm, device):
    """DataVolume name behind the tray's CD-ROM, or None when detached."""
    name = disk_name(device)
    disk = _index(fields.disks(vm), name)
    volume = _index(fields.volumes(vm), name)
    if disk is None or volume is None:
        return None
    return fields.get(fields.volumes(vm)[volume], 'dataVolume', 'name')


def _boot_orders(vm):
    return [d['bootOrder']
            for d in fields.disks(vm) + fields.interfaces(vm)
            if d.get('bootOrder') is not None]


def cdrom_disk(vm, device):
    """The CD-ROM disk to add: sata, read-only, bootable.

    When some device has a bootOrder, a disk without one is never tried,
    so the CD-ROM takes the next free (lowest priority) bootOrder: it stays
    bootable and the current boot device does not change. No other
    device's bootOrder is touched.
    """
    disk = {'name': disk_name(device),
            'cdrom': {'bus': 'sata', 'readonly': True}}
    orders = _boot_orders(vm)
    if orders:
        disk['bootOrder'] = max(orders) + 1
    return disk


def _list_add_ops(vm, tokens, item):
    if fields.get(vm, *tokens) is None:
        return fields.set_ops(vm, tokens, [item])
    return [jsonpatch.add(jsonpatch.path(*tokens, '-'), item)]


DISKS = fields.DEVICES + ('disks',)


def attach_ops(vm, device, dv_name):
    """Ops giving ``vm`` the tray's CD-ROM disk and volume for ``dv_name``.

    One patch: adds whichever of disk and volume is missing and points an
    existing volume at ``dv_name``. [] when already attached.
    """
    name = disk_name(device)
    ops = []
    disk = _index(fields.disks(vm), name)
    if disk is None:
        ops += _list_add_ops(vm, DISKS, cdrom_disk(vm, device))
    volume = _index(fields.volumes(vm), name)
    wanted = {'name': name, 'dataVolume': {'name': dv_name}}
    if volume is None:
        ops += _list_add_ops(vm, fields.VOLUMES, wanted)
    elif fields.volumes(vm)[volume] != wanted:
        where = jsonpatch.path(*fields.VOLUMES, volume)
        ops += [jsonpatch.test(where + '/name', name),
                jsonpatch.replace(where, wanted)]
    return ops


def detach_ops(vm, device):
    """Ops removing the tray's disk and volume, by index. [] when absent.

    Each removal is preceded by a ``test`` of the element's name, so the
    patch fails rather than removing another device if the lists moved;
    the caller still guards it with the VM's resourceVersion.
    """
    name = disk_name(device)
    ops = []
    for tokens, items in ((DISKS, fields.disks(vm)),
                          (fields.VOLUMES, fields.volumes(vm))):
        index = _index(items, name)
        if index is not None:
            ops += [jsonpatch.test(jsonpatch.path(*tokens, index, 'name'),
                                   name),
                    jsonpatch.remove(jsonpatch.path(*tokens, index))]
    return ops


def import_error(dv):
    """Why the import failed or is failing, or None.

    CDI reports a failed or retrying importer on the ``Running`` condition
    (status False, reason such as ``Error``), and a final failure with
    phase ``Failed``.
    """
    phase = fields.get(dv, 'status', 'phase')
    running = imports.condition(dv, 'Running')
    if phase == FAILED or imports.failing(dv):
        return (running.get('message')
                or imports.condition(dv, 'Ready').get('message')
                or 'DataVolume import failed (phase %s)' % phase)
    return None


def _tray_name(vm, volume):
    """``volume``'s name when a CD-ROM disk of that name exists."""
    name = volume.get('name')
    for disk in fields.disks(vm):
        if disk.get('name') == name and 'cdrom' in disk:
            return name
    return None


def media_state(vm, dv):
    """Redfish view of a tray: a :class:`MediaState`.

    ``inserted`` is true only when the DataVolume import has Succeeded and
    the VM's CD-ROM volume refers to it. While importing, the image shows
    with ``inserted`` false and ``progress`` (CDI's "45.1%" string); a
    failed import shows ``inserted`` false and ``error``. A DataVolume
    the VM does not use reads empty unless it was inserted with
    ``Inserted: false``: its InsertMedia failed (or has not answered yet).
    """
    if not dv or fields.get(dv, 'metadata', 'deletionTimestamp'):
        return EMPTY
    url = source_url(dv)
    phase = fields.get(dv, 'status', 'phase')
    attached = any(
        fields.get(v, 'dataVolume', 'name') == dv['metadata']['name']
        and v.get('name') == _tray_name(vm, v)
        for v in fields.volumes(vm))
    wanted = fields.annotation(dv, ANNOTATION_INSERTED) != 'false'
    if wanted and not attached:
        return EMPTY
    return MediaState(
        image=url,
        image_name=image_name(url),
        inserted=phase == SUCCEEDED and attached and wanted,
        write_protected=True,
        progress=fields.get(dv, 'status', 'progress'),
        error=import_error(dv))
