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

"""Virtual media for KubeVirt: CDI DataVolumes attached as a CD-ROM.

sushy-tools builds it as ``KubeVirtVmediaDriver(config, logger, systems)``
through :mod:`sushy_kubevirt.plugin`. Nothing is kept in process memory or
in sushy-tools' state files: a tray is the VM's CD-ROM disk and volume plus
its DataVolume (see :mod:`sushy_kubevirt.kubevirt.media`), read from the
systems driver's watch cache, so every worker and a restarted emulator
agree.

InsertMedia validates everything before it writes: the ``Image`` URL
(http or https, the host resolves and accepts a TCP connection from the
emulator), the device and the other action parameters. It then creates
the credentials Secret (if any) and the DataVolume, and attaches the
CD-ROM in one guarded JSON patch. ``Inserted`` reads true only once CDI's
import has Succeeded. A power-on while the attached image is importing is
answered 409 ``ActionParameterValueConflict`` (Ironic retries it); a
failed import answers 409 without that marker and never starts the VM
(:func:`check_power_on`).
"""

import dataclasses
import socket
import typing
from urllib import parse as urlparse

import flask
import requests
from sushy_tools.emulator.resources import base
from sushy_tools.emulator.resources import vmedia
from sushy_tools import error

from sushy_kubevirt import config as config_mod
from sushy_kubevirt.drivers import errormap
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import identity as identity_mod
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import power
from sushy_kubevirt.kubevirt import refusals

CD = 'Cd'
DEVICES = {CD: {'Name': 'Virtual CD', 'MediaTypes': ['CD', 'DVD']}}
SCHEMES = ('http', 'https')
#: InsertMedia parameters understood (DMTF VirtualMedia.InsertMedia).
PARAMETERS = ('Image', 'Inserted', 'WriteProtected', 'UserName',
              'Password', 'TransferProtocolType', 'TransferMethod')
INSERT_ENDPOINT = 'VirtualMedia.virtual_media_insert'
_MASKED = '******'


@dataclasses.dataclass(frozen=True)
class Settings:
    """``SUSHY_EMULATOR_KUBEVIRT_VMEDIA_*`` settings."""

    #: StorageClass of the DataVolumes; None: the cluster default.
    storage_class: typing.Optional[str] = None
    #: ``Filesystem`` or ``Block``; None: from the StorageProfile.
    volume_mode: typing.Optional[str] = None
    #: Fraction added to the image size (CDI filesystem overhead).
    size_margin: float = 0.1
    #: Storage request when the image size is unknown.
    default_size: str = '10Gi'
    #: ConfigMap with the CA bundle for https images (CDI certConfigMap).
    cert_configmap: typing.Optional[str] = None
    #: Resolve and connect to the image host before creating anything.
    check_url: bool = True
    #: Seconds allowed for that check (and the HEAD asking the size).
    url_timeout: float = 5.0


def load_settings(config):
    """:class:`Settings` from the emulator's config mapping."""
    def key(name):
        return '%sVMEDIA_%s' % (config_mod.PREFIX, name.upper())

    values = {}
    for field in dataclasses.fields(Settings):
        if key(field.name) in config:
            values[field.name] = config[key(field.name)]
    settings = Settings(**values)
    for name in ('storage_class', 'cert_configmap', 'default_size'):
        value = getattr(settings, name)
        if value is not None and (not isinstance(value, str) or not value):
            raise config_mod.ConfigError(
                '%s must be a non-empty string, got %r' % (key(name), value))
    if settings.volume_mode not in (None, 'Filesystem', 'Block'):
        raise config_mod.ConfigError(
            '%s must be Filesystem or Block, got %r'
            % (key('volume_mode'), settings.volume_mode))
    for name in ('size_margin', 'url_timeout'):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or value < 0:
            raise config_mod.ConfigError(
                '%s must be a number >= 0, got %r' % (key(name), value))
    if not isinstance(settings.check_url, bool):
        raise config_mod.ConfigError('%s must be True or False, got %r'
                                     % (key('check_url'), settings.check_url))
    return settings


def _device(device):
    if device not in DEVICES:
        raise error.NotFound(
            'No such virtual media device %s; this system has: %s'
            % (device, ', '.join(DEVICES)))
    return DEVICES[device]


def find_vm(systems, identity):
    """The VM behind a system id (UUID, name or ``namespace.name``).

    Aliases are resolved here rather than redirected: sushy-tools cannot
    redirect routes with a device in the URL.
    """
    try:
        return systems.find_vm(identity)
    except error.AliasAccessError as exc:
        return systems.find_vm(exc.args[0])


def _tray_datavolume(cluster, vm, device):
    """The DataVolume of the tray (attached one first), or None."""
    namespace = vm['metadata']['namespace']
    name = (media.attached_datavolume(vm, device)
            or media.datavolume_name(vm, device))
    return cluster.get_datavolume(namespace, name)


def check_power_on(cluster, vm, calls):
    """Refuse ``calls`` that would boot ``vm`` with an unusable image.

    Only calls that create a VMI from the template (start, restart, the
    runStrategy Once patch) are checked, and ``vm`` must be as the API
    server has it now (the systems driver reads it live before a start):
    a cached VM may not show another worker's InsertMedia yet. The
    attached DataVolume is read live too (1 GET per tray). While the
    image imports the answer is a 409 carrying
    ``ActionParameterValueConflict``, which Ironic retries for a
    power-on (``[redfish] power_on_conflict_retry_attempts``); a failed
    import is a 409 without it: the VM is never started from an empty or
    broken tray.
    """
    if not any(power.starts(call) for call in calls):
        return
    namespace = vm['metadata']['namespace']
    for device in DEVICES:
        name = media.attached_datavolume(vm, device)
        if name is None:
            continue
        dv = cluster.get_datavolume_live(namespace, name)
        blocker = media.power_on_blocker(vm, dv, device)
        if blocker is None:
            continue
        retryable, message = blocker
        message = 'Cannot power on yet: %s' % message
        if retryable:
            raise errormap.busy(message + '; retry later')
        raise error.Conflict(message)


def _eject_ops(vm, device):
    """Detach ops, resetting the boot device to Hdd when it was Cd."""
    detach = media.detach_ops(vm, device)
    if not detach or boot.boot_device(vm) != boot.CD:
        return detach
    try:
        reset = boot.boot_device_ops(vm, boot.HDD)
    except refusals.ModelError:
        reset = []
    return reset + detach


def set_boot_image(systems, identity, device, boot_image=None,
                   write_protected=True):
    """The systems driver's ``set_boot_image``: make the VM match the tray.

    sushy-tools calls it after ``insert_image`` (``boot_image`` = the
    DataVolume name it returned) and after ``eject_image`` (None). Both
    already did the work, so this normally costs no API call; it only
    repairs a VM that another writer changed in between.
    """
    _device(device)
    vm = find_vm(systems, identity)
    namespace, name = identity_mod.key(vm)
    if boot_image is None:
        guarded.guarded_patch(systems.cluster, namespace, name,
                              lambda vm: _eject_ops(vm, device))
        return
    dv = systems.cluster.get_datavolume(namespace, boot_image)
    if dv is None or not media.is_tray(dv, vm, device):
        raise error.NotFound('No virtual media DataVolume %s' % boot_image)
    if fields.annotation(dv, media.ANNOTATION_INSERTED) == 'false':
        return
    guarded.guarded_patch(systems.cluster, namespace, name,
                          lambda vm: media.attach_ops(vm, device, boot_image))


def _request_parameters():
    """The InsertMedia JSON body, when called from that route.

    ({} elsewhere, e.g. sushy-tools' HttpBootUri PATCH also inserts.)
    """
    if not flask.has_request_context() or \
            flask.request.endpoint != INSERT_ENDPOINT:
        return {}
    body = flask.request.get_json(silent=True)
    return body if isinstance(body, dict) else {}


def _validate(image_url, inserted, write_protected, body):
    unknown = sorted(set(body) - set(PARAMETERS))
    if unknown:
        raise error.BadRequest(
            'InsertMedia parameter %s is not supported; supported: %s'
            % (', '.join(unknown), ', '.join(PARAMETERS)))
    if not image_url or not isinstance(image_url, str):
        raise error.BadRequest(
            'InsertMedia requires Image: the http or https URL of the image')
    parsed = urlparse.urlsplit(image_url)
    scheme = parsed.scheme.lower()
    if scheme not in SCHEMES:
        raise error.BadRequest(
            'Image %s: scheme %r is not supported; use http or https'
            % (image_url, parsed.scheme))
    try:
        parsed.port
    except ValueError:
        raise error.BadRequest('Image %s has an invalid port' % image_url)
    if not parsed.hostname:
        raise error.BadRequest('Image %s has no host' % image_url)
    for name, value in (('Inserted', inserted),
                        ('WriteProtected', write_protected)):
        if not isinstance(value, bool):
            raise error.BadRequest('%s must be true or false' % name)
    if not write_protected:
        raise error.BadRequest(
            'WriteProtected false is not possible: a virtual CD is '
            'read-only')
    protocol = body.get('TransferProtocolType')
    if protocol is not None and protocol != scheme.upper():
        raise error.BadRequest(
            'TransferProtocolType %r does not match the Image URL scheme '
            '(%s)' % (protocol, scheme.upper()))
    method = body.get('TransferMethod')
    if method not in (None, 'Stream'):
        raise error.BadRequest(
            'TransferMethod %r is not supported; the image is imported '
            'from its URL (Stream)' % method)


def _check_reachable(image_url, timeout):
    """400 unless the image host resolves and accepts a TCP connection."""
    parsed = urlparse.urlsplit(image_url)
    port = parsed.port or (443 if parsed.scheme.lower() == 'https' else 80)
    try:
        addresses = socket.getaddrinfo(parsed.hostname, port,
                                       type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise error.BadRequest('Image %s: host %s cannot be resolved: %s'
                               % (image_url, parsed.hostname, exc))
    last = None
    for family, kind, proto, _name, address in addresses:
        try:
            with socket.socket(family, kind, proto) as sock:
                sock.settimeout(timeout)
                sock.connect(address)
            return
        except OSError as exc:
            last = exc
    raise error.BadRequest('Image %s: host %s port %s is not reachable: %s'
                           % (image_url, parsed.hostname, port, last))


def _image_size(image_url, auth, timeout):
    """Content-Length from a HEAD request, or None (best effort)."""
    try:
        answer = requests.head(image_url, auth=auth, timeout=timeout,
                               allow_redirects=True)
        if answer.status_code == 200:
            return int(answer.headers.get('Content-Length') or 0) or None
    except (requests.RequestException, ValueError):
        pass
    return None


def _reusable(dv, image_url, username, inserted):
    """True when ``dv`` already is (or is becoming) the wanted media."""
    if dv is None or fields.get(dv, 'metadata', 'deletionTimestamp'):
        return False
    return (media.source_url(dv) == image_url
            and fields.get(dv, 'status', 'phase') != media.FAILED
            and fields.annotation(dv, media.ANNOTATION_USERNAME) == (
                username or None)
            and (fields.annotation(dv, media.ANNOTATION_INSERTED)
                 != 'false') == inserted)


def _ignore_missing(call, *args):
    try:
        call(*args)
    except apierrors.NotFound:
        pass


class KubeVirtVmediaDriver(vmedia.BaseDriver):
    """Virtual media backed by CDI DataVolumes; device ``Cd`` only.

    Floppy/USB are not offered: KubeVirt has no removable-disk device a
    Redfish client could use for them.
    """

    def __init__(self, config, logger, systems):
        # Deliberately skip BaseDriver.__init__: it opens sushy-tools'
        # per-process state file, and all state here lives in Kubernetes.
        base.DriverBase.__init__(self, config, logger)
        self._systems = systems
        self._device_types = DEVICES
        self.settings = load_settings(config)

    @property
    def driver(self):
        return '<kubevirt-vmedia>'

    @property
    def _cluster(self):
        return self._systems.cluster

    def _get_device(self, identity, device):
        return _device(device)

    def _tray(self, identity, device):
        """``(dv, state)``: the tray's DataVolume (or None), its state."""
        _device(device)
        vm = find_vm(self._systems, identity)
        dv = _tray_datavolume(self._cluster, vm, device)
        return dv, media.media_state(vm, dv)

    @errormap.translate
    def get_device_image_info(self, identity, device):
        """The tray as the VM and its DataVolume show it now."""
        dv, state = self._tray(identity, device)
        username = fields.annotation(dv, media.ANNOTATION_USERNAME) \
            if state.image else None
        return vmedia.DeviceInfo(
            state.image_name, state.image, state.inserted,
            state.write_protected, username or '',
            _MASKED if username is not None else '', True)

    @errormap.translate
    def get_device_status(self, identity, device):
        """Properties added to the VirtualMedia resource (routes hook).

        ``Status`` (VirtualMedia v1.4): State Enabled, or Starting while
        the image imports; Health Critical with the error as a Condition
        when the import failed. ``Oem.SushyKubevirt``: the DataVolume's
        phase, progress and error.
        """
        dv, state = self._tray(identity, device)
        phase = fields.get(dv, 'status', 'phase') if state.image else None
        status = {'State': 'Enabled', 'Health': 'OK'}
        if state.image and phase != media.SUCCEEDED:
            status['State'] = 'Starting'
        if state.error:
            status['Health'] = 'Warning' if phase != media.FAILED \
                else 'Critical'
            status['Conditions'] = [{
                'MessageId': 'Base.1.0.GeneralError',
                'Message': 'Image import: %s' % state.error,
                'Severity': status['Health']}]
        return {'Status': status,
                'Oem': {'SushyKubevirt': {
                    'DataVolume': fields.get(dv, 'metadata', 'name')
                    if state.image else None,
                    'ImportPhase': phase,
                    'ImportProgress': state.progress if state.image
                    else None,
                    'ImportError': state.error}}}

    def update_device_info(self, identity, device, verify=False):
        _device(device)
        if not verify:
            raise error.BadRequest(
                'VerifyCertificate cannot be disabled: CDI always verifies '
                'https image servers (against the CA bundle in %s)'
                % (self.settings.cert_configmap or 'the system trust store'))

    def add_certificate(self, identity, device, cert_string, cert_type):
        raise error.NotSupportedError(
            'Put the CA certificate into the ConfigMap named by '
            'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_CERT_CONFIGMAP instead')

    replace_certificate = add_certificate

    def list_certificates(self, identity, device):
        _device(device)
        return []

    def delete_certificate(self, identity, device, cert_id):
        raise error.NotFound('Certificate %s not found' % cert_id)

    @errormap.translate
    def insert_image(self, identity, device, image_url, inserted=True,
                     write_protected=True, username=None, password=None):
        """Import ``image_url`` into the tray; return the DataVolume name.

        Validates first and changes nothing on bad input (400) or an
        unknown device (404). Re-inserting the URL being imported (or
        imported) is a no-op; another URL, other credentials or a failed
        import replace the DataVolume.
        """
        _device(device)
        _validate(image_url, inserted, write_protected, _request_parameters())
        vm = find_vm(self._systems, identity)
        auth = (username, password) if username and password else None
        if self.settings.check_url:
            _check_reachable(image_url, self.settings.url_timeout)
        namespace, name = identity_mod.key(vm)
        dv_name = media.datavolume_name(vm, device)
        current = self._cluster.get_datavolume(namespace, dv_name)
        if current is not None and not media.is_tray(current, vm, device):
            raise error.Conflict(
                'DataVolume %s/%s exists and is not virtual media of %s; '
                'refusing to replace it' % (namespace, dv_name, name))
        if not _reusable(current, image_url, auth and username, inserted):
            if current is not None:
                self._delete_tray(namespace, current)
            self._create_tray(vm, device, image_url, auth, inserted)
        self._attach(namespace, name, device, dv_name, inserted)
        self._logger.info('Virtual media %s of %s/%s: importing %s into '
                          'DataVolume %s', device, namespace, name,
                          image_url, dv_name)
        return dv_name

    def _create_tray(self, vm, device, image_url, auth, inserted):
        namespace = vm['metadata']['namespace']
        dv_name = media.datavolume_name(vm, device)
        secret = None
        if auth:
            body = media.secret_body(vm, device, dv_name, *auth)
            secret = body['metadata']['name']
            try:
                self._cluster.create_secret(namespace, body)
            except apierrors.Conflict:
                _ignore_missing(self._cluster.delete_secret, namespace,
                                secret)
                self._cluster.create_secret(namespace, body)
        size = None
        if self.settings.check_url:
            size = _image_size(image_url, auth, self.settings.url_timeout)
        body = media.datavolume_body(
            vm, device, image_url, size_bytes=size,
            margin=self.settings.size_margin,
            default_size=self.settings.default_size,
            storage_class=self.settings.storage_class,
            volume_mode=self.settings.volume_mode, secret=secret,
            cert_configmap=self.settings.cert_configmap, inserted=inserted,
            username=auth and auth[0])
        try:
            self._cluster.create_datavolume(namespace, body)
        except apierrors.Conflict:
            raise error.Conflict(
                'DataVolume %s/%s is still being replaced; retry the '
                'InsertMedia' % (namespace, dv_name))

    def _attach(self, namespace, name, device, dv_name, inserted):
        def build(vm):
            if inserted:
                return media.attach_ops(vm, device, dv_name)
            return media.detach_ops(vm, device)
        try:
            guarded.guarded_patch(self._cluster, namespace, name, build)
        except apierrors.ApiError:
            dv = self._cluster.get_datavolume(namespace, dv_name)
            if dv is not None:
                self._delete_tray(namespace, dv)
            raise

    def _delete_tray(self, namespace, dv):
        _ignore_missing(self._cluster.delete_datavolume, namespace,
                        dv['metadata']['name'])
        secret = fields.get(dv, 'spec', 'source', 'http', 'secretRef')
        if secret:
            _ignore_missing(self._cluster.delete_secret, namespace, secret)

    @errormap.translate
    def eject_image(self, identity, device):
        """Detach the CD-ROM (one guarded patch), delete the DataVolume.

        Idempotent: with nothing inserted no API call is made. When the
        boot device was Cd it becomes Hdd, as sushy-tools' libvirt driver
        does on eject.
        """
        _device(device)
        vm = find_vm(self._systems, identity)
        namespace, name = identity_mod.key(vm)
        dv = _tray_datavolume(self._cluster, vm, device)
        guarded.guarded_patch(self._cluster, namespace, name,
                              lambda vm: _eject_ops(vm, device))
        if dv is not None and media.is_tray(dv, vm, device):
            self._delete_tray(namespace, dv)
            self._logger.info('Virtual media %s of %s/%s ejected',
                              device, namespace, name)
