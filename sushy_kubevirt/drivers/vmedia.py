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
agree. The policy (parameters, reuse, Status) is
:mod:`sushy_kubevirt.kubevirt.tray`; the image check's I/O is
:mod:`sushy_kubevirt.imagecheck`.

InsertMedia checks everything before it writes: the action parameters
and the ``Image`` URL (400 with a Base registry MessageId), then the host
policy and the image's size, within one deadline (the request waits
``url_wait`` seconds for it at most, so a slow image server cannot hold
a worker thread: past that the default size is requested and only the
policy on the host name applies). It then creates the
credentials Secret (if any; userinfo in the URL goes there too), the
DataVolume, and attaches the CD-ROM in one guarded JSON patch. Both
objects carry a token of the request: when the answer to a write is lost
(a cut connection, a 5xx) the request reads back what it made and goes
on; otherwise it deletes what it made before it answers, and what it
cannot delete is left to the orphan collector
(:mod:`sushy_kubevirt.drivers.traywrites`,
:mod:`sushy_kubevirt.drivers.orphans`).
``Inserted`` reads true only once CDI's import has Succeeded. A power-on
while the attached image is importing is answered 409
``ActionParameterValueConflict`` (Ironic retries it); a failed import
answers 409 without that marker and never starts the VM
(:func:`sushy_kubevirt.drivers.resets.check_power_on`).
"""

import concurrent.futures
import functools

from sushy_tools.emulator.resources import base
from sushy_tools.emulator.resources import vmedia
from sushy_tools import error

from sushy_kubevirt import config
from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt.drivers import traywrites
from sushy_kubevirt.drivers import vmediatrust
from sushy_kubevirt import errormap
from sushy_kubevirt import imagecheck
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import client
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import leftovers
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import tray
from sushy_kubevirt.kubevirt import trust
from sushy_kubevirt import messages

HTTP_BOOT_URI = 'Boot/HttpBootUri'
#: Image checks running at once in a process (more wait their turn).
CHECKS = 4


def refused(exc):
    """The 4xx answer for a model refusal (:class:`imageurl.Invalid`)."""
    return messages.RedfishError(exc.message_id, *exc.message_args,
                                 detail=str(exc))


def _device(device):
    if device not in tray.DEVICES:
        raise error.NotFound(
            'No such virtual media device %s; this system has: %s'
            % (device, ', '.join(tray.DEVICES)))
    return tray.DEVICES[device]


def find_vm(systems, ident):
    """The VM behind a system id (UUID, name or ``namespace.name``).

    Aliases are resolved here rather than redirected: sushy-tools cannot
    redirect routes with a device in the URL.
    """
    try:
        return systems.find_vm(ident)
    except error.AliasAccessError as exc:
        return systems.find_vm(exc.args[0])


def _tray_datavolume(cluster, vm, device):
    """The DataVolume of the tray (attached one first), or None."""
    return cluster.get_datavolume(vm['metadata']['namespace'],
                                  media.tray_datavolume_name(vm, device))


def set_boot_image(systems, ident, device, boot_image=None,
                   write_protected=True):
    """The systems driver's ``set_boot_image``: make the VM match the tray.

    sushy-tools calls it after ``insert_image`` (``boot_image`` = the
    DataVolume name it returned) and after ``eject_image`` (None). Both
    already did the work, so this normally costs no API call; it only
    repairs a VM that another writer changed in between. A DataVolume
    gone by now was ejected by another request after this insert
    attached it: that later eject stands, as if the two had come one
    after the other, and the insert is not refused for it.
    """
    _device(device)
    vm = find_vm(systems, ident)
    namespace, name = identity.key(vm)
    if boot_image is None:
        preconditions.patch(systems.cluster, namespace, name,
                            lambda vm: tray.eject_ops(vm, device))
        return
    dv = systems.cluster.get_datavolume(namespace, boot_image)
    if dv is None:
        return
    if not media.is_tray(dv, vm, device):
        raise error.NotFound('No virtual media DataVolume %s' % boot_image)
    if fields.annotation(dv, media.ANNOTATION_INSERTED) == 'false':
        return
    preconditions.patch(systems.cluster, namespace, name,
                        lambda vm: tray.attach_ops(vm, device, boot_image)
                        + generations.record_ops(vm, device, dv))


def _action_body(action):
    """``(True, body)`` when serving ``action``, else (False, None).

    ``body``: the action's parameters (:class:`.context.Request`, the
    Redfish layer parsed them), None when there are none.
    """
    request = context.current()
    if request.action != action:
        return False, None
    return True, request.parameters


class KubeVirtVmediaDriver(vmediatrust.Trust, vmedia.BaseDriver):
    """Virtual media backed by CDI DataVolumes; device ``Cd`` only.

    Floppy/USB are not offered: KubeVirt has no removable-disk device a
    Redfish client could use for them.
    """

    def __init__(self, config_, logger, systems):
        # Deliberately skip BaseDriver.__init__: it opens sushy-tools'
        # per-process state file, and all state here lives in Kubernetes.
        base.DriverBase.__init__(self, config_, logger)
        self._systems = systems
        self._device_types = tray.DEVICES
        self.settings = config.load(config_).vmedia
        #: VerifyCertificate of a tray with no own setting.
        self._verify = config.vmedia_verify(config_)
        self._policy = None
        #: Image checks; bounded, each ends by its own deadline.
        self._checks = concurrent.futures.ThreadPoolExecutor(
            CHECKS, thread_name_prefix='image-check')

    @property
    def driver(self):
        return '<kubevirt-vmedia>'

    @property
    def _cluster(self):
        return self._systems.cluster

    def _get_device(self, identity_, device):
        return _device(device)

    def _find_vm(self, identity_):
        return find_vm(self._systems, identity_)

    def _tray(self, identity_, device):
        """``(vm, dv, state)``: the VM, its tray's DataVolume, its state."""
        _device(device)
        vm = find_vm(self._systems, identity_)
        dv = _tray_datavolume(self._cluster, vm, device)
        return vm, dv, media.media_state(vm, dv)

    @errormap.translate
    def get_device_image_info(self, identity_, device):
        """The tray as the VM and its DataVolume show it now."""
        vm, dv, state = self._tray(identity_, device)
        username, password = tray.credentials_shown(dv, state)
        return vmedia.DeviceInfo(
            state.image_name, state.image, state.inserted,
            state.write_protected, username, password,
            trust.verify_certificate(vm, device, self._verify))

    @errormap.translate
    def get_device_status(self, identity_, device):
        """Properties added to VirtualMedia (:mod:`.redfish.virtualmedia`)."""
        return tray.device_status(*self._tray(identity_, device)[1:])

    def _host_policy(self):
        if self._policy is None:
            s = self.settings
            self._policy = imageurl.Policy(
                allowed=s.allowed_hosts, denied=s.denied_hosts,
                endpoints=imagecheck.endpoints(
                    client.api_host(self._cluster.settings), s.url_timeout))
        return self._policy

    def _image_size(self, request, context=None):
        """Apply the host policy; the image size, or None when unknown.

        ``context``: the TLS context of an https check.

        The check runs in :attr:`_checks`; the request waits for it at
        most ``url_wait`` seconds. Past that only the policy on the host
        name applies here, and the check's outcome is only logged.
        """
        s = self.settings
        credentials = (request.username, request.password) \
            if request.username else None
        url = request.url
        check = self._checks.submit(
            imagecheck.check, url, self._host_policy(), s.url_timeout,
            s.max_redirects, fetch=s.check_url, credentials=credentials,
            context=context)
        try:
            return check.result(timeout=min(s.url_wait, s.url_timeout))
        except concurrent.futures.TimeoutError:
            check.add_done_callback(functools.partial(self._late, url.url))
            reason = imageurl.refusal(self._host_policy(), url.host,
                                      url.port, [])
            if reason:
                raise self._refusal(request, reason) from None
            self._logger.info('Image %s: size check still running after '
                              '%ss; requesting %s', url.url, s.url_wait,
                              s.default_size)
            return None
        except imagecheck.Refused as exc:
            raise self._refusal(request, exc) from None
        except imagecheck.Unavailable as exc:
            self._logger.info('Image %s: size unknown (%s); requesting %s',
                              url.url, exc, s.default_size)
            return None

    def _refusal(self, request, reason):
        return refused(imageurl.invalid(
            'denied', request.url.url, request.name, request.action,
            '%s %s is refused: %s' % (request.name, request.url.url,
                                      reason)))

    def _late(self, url, check):
        """Log the outcome of a check the request stopped waiting for."""
        try:
            size = check.result()
        except (imagecheck.Refused, imagecheck.Unavailable) as exc:
            self._logger.warning('Image %s: late size check: %s', url, exc)
        else:
            self._logger.info('Image %s: late size check: %s bytes', url,
                              size)

    @errormap.translate
    def insert_image(self, identity_, device, image_url, inserted=True,
                     write_protected=True, username=None, password=None):
        """Import ``image_url`` into the tray; return the DataVolume name.

        Checks first and changes nothing on bad input (400) or an
        unknown device (404). Re-inserting the URL being imported (or
        imported) is a no-op unless it has credentials; another URL,
        credentials or a failed import make a DataVolume of a new name
        (the next generation), attach it, then delete the former one:
        its PVC, which a running VMI keeps, never holds up the new
        import.
        """
        _device(device)
        routed, body = _action_body(tray.INSERT)
        try:
            # Not routed: the System PATCH of HttpBootUri inserts too.
            request = tray.insert_request(body) if routed else \
                tray.uri_request(image_url, HTTP_BOOT_URI)
        except imageurl.Invalid as exc:
            raise refused(exc) from None
        vm = find_vm(self._systems, identity_)
        verify = trust.verify_certificate(vm, device, self._verify) \
            if request.verify is None else request.verify
        tls = self._tls(vm, device, request.url, verify)
        size = self._image_size(request, self._check_context(vm, device,
                                                             tls))
        namespace, name = identity.key(vm)
        dv_name = media.tray_datavolume_name(vm, device)
        current = self._cluster.get_datavolume(namespace, dv_name)
        if current is not None and not media.is_tray(current, vm, device):
            raise error.Conflict(
                'DataVolume %s/%s exists and is not virtual media of %s; '
                'refusing to replace it' % (namespace, dv_name, name))
        # A DataVolume takes no precondition: an If-Match is consumed on
        # the VM first (no API call without one).
        preconditions.claim(self._cluster, namespace, name)
        if request.verify is not None:
            # Sent with the insert: the tray's setting from now on.
            preconditions.patch(
                self._cluster, namespace, name,
                lambda vm: trust.verify_ops(vm, device, request.verify))
        former = None
        if not tray.reusable(current, request.url.url, request.inserted,
                             request.username is not None, tls) or \
                leftovers.fenced(vm, current):
            # (Another process is deleting it as an orphan: make it anew.)
            former = current
            current = traywrites.create(
                self._cluster, self._logger, vm, device, request, size,
                self.settings, traywrites.free_generation(
                    self._cluster, vm, device, former), tls)
        traywrites.attach(self._cluster, self._logger, namespace, name,
                          device, current, request.inserted)
        if former is not None:
            self._drop(namespace, former)
        dv_name = current['metadata']['name']
        self._logger.info('Virtual media %s of %s/%s: importing %s into '
                          'DataVolume %s', device, namespace, name,
                          request.url.url, dv_name)
        return dv_name

    def _drop(self, namespace, dv):
        """Delete the DataVolume an insert replaced (that one only).

        A running VMI keeps its PVC until it stops (``pvc-protection``);
        what cannot be deleted now is an orphan, the collector's.
        """
        try:
            traywrites.delete(self._cluster, namespace, dv, guard=True)
        except apierrors.ApiError as exc:
            self._logger.warning('DataVolume %s/%s is left unused (%s); '
                                 'the orphan collector deletes it',
                                 namespace, dv['metadata']['name'], exc)

    @errormap.translate
    def eject_image(self, identity_, device):
        """Detach the CD-ROM (one guarded patch), delete the DataVolume.

        Idempotent: with nothing inserted the only API call is the
        DELETE of a credentials Secret an earlier failed insert may have
        left (404 otherwise). When the boot device was Cd it becomes Hdd,
        as sushy-tools' libvirt driver does on eject; a pending one-time
        Cd boot stays, and falls through (:func:`tray.eject_ops`).
        """
        _device(device)
        try:
            tray.eject_request(_action_body(tray.EJECT)[1])
        except imageurl.Invalid as exc:
            raise refused(exc) from None
        vm = find_vm(self._systems, identity_)
        namespace, name = identity.key(vm)
        dv = _tray_datavolume(self._cluster, vm, device)
        preconditions.patch(self._cluster, namespace, name,
                            lambda vm: tray.eject_ops(vm, device))
        if dv is not None and media.is_tray(dv, vm, device):
            traywrites.delete(self._cluster, namespace, dv)
            self._logger.info('Virtual media %s of %s/%s ejected',
                              device, namespace, name)
        else:
            # That of the next generation, which a failed insert made.
            traywrites.ignore_missing(
                self._cluster.delete_secret, namespace,
                media.secret_name(media.datavolume_name(
                    vm, device, generations.generation(vm, device) + 1)))
