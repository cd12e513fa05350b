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

"""sushy-tools systems driver for KubeVirt VirtualMachines.

Thin: every method joins cached reads of the process-wide
:class:`~sushy_kubevirt.kube.cluster.Cluster` with the pure functions of
:mod:`sushy_kubevirt.kubevirt`, and writes through a guarded JSON patch
(:func:`~sushy_kubevirt.kube.guarded.guarded_patch`) or a KubeVirt
subresource. Reads cost no API call once the watch cache has synced.
"""

import functools

from sushy_tools.emulator.resources.systems import base
from sushy_tools import error

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import sessionstore
from sushy_kubevirt.accounts import sources
from sushy_kubevirt import config
from sushy_kubevirt.drivers import biossecrets
from sushy_kubevirt.drivers import clusters
from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import etagmemo
from sushy_kubevirt.drivers import firmwareupdates
from sushy_kubevirt.drivers import indicators
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.drivers import namespacechassis
from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt.drivers import resets
from sushy_kubevirt.drivers import snapshot
from sushy_kubevirt.drivers import vmedia
from sushy_kubevirt import errormap
from sushy_kubevirt.events import service
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import bootprogress
from sushy_kubevirt.kubevirt import disks
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import firmwareupdate
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import inventory
from sushy_kubevirt.kubevirt import netadapters
from sushy_kubevirt.kubevirt import power
from sushy_kubevirt.kubevirt import versions
from sushy_kubevirt import messages

HTTP_BOOT_URI_ANNOTATION = 'sushy-kubevirt.io/http-boot-uri'


class KubeVirtDriver(base.AbstractSystemsDriver):
    """Redfish Systems backed by KubeVirt VirtualMachines."""

    @classmethod
    def initialize(cls, config_, logger, *args, **kwargs):
        """Check the ``SUSHY_EMULATOR_KUBEVIRT_*`` settings (no I/O).

        :raises sushy_kubevirt.config.ConfigError: naming the key.
        """
        super().initialize(config_, logger)
        cls._settings = config.load(config_)
        cls._session_settings = sessionstore.settings(
            config_, cls._settings.namespaces)
        if cls._settings.accounts_file:
            # A bad file stops the start.
            accountsfile.AccountsFile(cls._settings.accounts_file).accounts()
        elif config_.get(config.AUTH_FILE_KEY) and \
                cls._settings.accounts_source == config.FILE:
            logger.warning(
                'Every user of %s is an Administrator of every System '
                'served; set %s to give users roles and namespaces',
                config.AUTH_FILE_KEY, config.PREFIX + 'ACCOUNTS_FILE')
        return cls

    def __init__(self):
        self._cluster = None
        self._lookup = None
        self._sessions = None
        self._accounts = None
        self._updates = None
        self._etags = etagmemo.ETags(lambda: self.cluster, self._etag)

    @property
    def driver(self):
        return '<kubevirt>'

    @property
    def cluster(self):
        """The process-wide Cluster; nothing connects before first use."""
        if self._cluster is None:
            self._cluster = clusters.shared(
                self._settings, self._kubevirt_vmedia(), self._logger)
        return self._cluster

    def _kubevirt_vmedia(self):
        return self._config.get(config.VMEDIA_DRIVER_KEY) == 'kubevirt'

    @property
    def _ids(self):
        if self._lookup is None:
            self._lookup = lookup.Lookup(self.cluster, self._logger)
        return self._lookup

    def find_vm(self, ident):
        """The cached VirtualMachine served as System ``ident`` (read-only).

        Public for the other drivers (virtual media). ``ident`` is the
        System id (firmware UUID), a VM name or ``<namespace>.<name>``.

        :raises sushy_tools.error.AliasAccessError: ``ident`` is an alias;
            ``args[0]`` is the canonical id.
        :raises sushy_tools.error.NotFound: no such served VM.
        """
        namespace, name = self._ids.locate(ident)
        vm = snapshot.memoized(('vm', namespace, name),
                               lambda: self.cluster.get_vm(namespace, name))
        if vm is None:
            raise error.NotFound('System %s not found' % ident)
        return vm

    _vm = find_vm

    def _vmi(self, vm):
        key = identity.key(vm)
        return snapshot.memoized(('vmi',) + key,
                                 lambda: self.cluster.get_vmi(*key))

    def _patch(self, ident, build_ops):
        namespace, name = self._ids.locate(ident)
        preconditions.patch(self.cluster, namespace, name, build_ops,
                            retries=preconditions.PATCH_ATTEMPTS)

    # extensions used by sushy_kubevirt.plugin and sushy_kubevirt.redfish

    def check(self):
        """Check the cluster and namespaces can be read (start-up).

        :raises sushy_kubevirt.config.ConfigError: naming the key.
        """
        self.cluster.validate()
        if self._settings.events.namespace:
            self.cluster.validate_namespace(
                self._settings.events.namespace,
                config.EVENTS_PREFIX + 'NAMESPACE')
        if self._settings.accounts_namespace:
            self.cluster.validate_namespace(
                self._settings.accounts_namespace,
                config.ACCOUNTS_NAMESPACE_KEY)

    def sessions(self):
        """The session store (Secrets, :mod:`.accounts.sessionstore`)."""
        if self._sessions is None:
            self._sessions = sessionstore.Store(self.cluster,
                                                self._session_settings)
        return self._sessions

    def accounts(self):
        """The accounts (:mod:`.accounts.sources`), else None."""
        if self._accounts is None:
            self._accounts = sources.accounts(self.cluster, self._settings)
        return self._accounts

    def metrics_text(self):
        """Prometheus text: cache reads and API calls by verb/resource."""
        text = self.cluster.accounting.render()
        events = self.event_service()
        return text + events.metrics_text() if events else text

    def event_service(self):
        """This process's EventService (started), or None when disabled."""
        if not self._settings.events.namespace:
            return None
        return service.shared(self.cluster, self._settings)

    def firmware_updates(self):
        """This process's firmware updates (:mod:`.firmwareupdates`)."""
        if self._updates is None:
            self._updates = firmwareupdates.Updates(
                self, self._settings.vmedia, self._logger)
        return self._updates

    def indicators_driver(self, fallback):
        """IndicatorLEDs kept on the VMs (``Application.indicators``).

        :param fallback: returns the stock driver, for the Chassis.
        """
        return indicators.KubeVirtIndicators(
            self._config, self._logger, self, fallback)

    def chassis_driver(self):
        """One Chassis per namespace (``Application.chassis``)."""
        return namespacechassis.NamespaceChassis(
            self._config, self._logger, self)

    # identity

    @property
    @errormap.translate
    def systems(self):
        """Ids of the VMs of every namespace that can be read.

        The namespaces that cannot (forbidden, missing) are left out and
        named by :meth:`collection_messages`; only when none can be read
        is the answer a 503.
        """
        ids, context.current().unlisted = self._ids.systems()
        return ids

    @errormap.translate
    def placed(self):
        """``(namespace, id)`` of every System of :attr:`systems`."""
        return self._ids.placed()[0]

    def count_systems(self, reaches):
        """How many Systems :attr:`systems` lists to an account.

        ``reaches(namespace, labels)``: the account's reach, None when it
        reaches every VM. None when no namespace can be read.
        """
        try:
            return self._ids.count(reaches)
        except apierrors.Unreadable:
            return None

    def collection_messages(self, request):
        """``@Message.ExtendedInfo`` of ``request``'s Systems collection.

        One Base ``OperationFailed`` per namespace it left out; [] when it
        lists every one.
        """
        return [errormap.unlisted(exc) for exc in request.unlisted]

    @errormap.translate
    def uuid(self, identity_):
        """The firmware UUID (or, when it holds none, ``<ns>.<name>``)."""
        return identity.system_id(self._vm(identity_))

    @errormap.translate
    def name(self, identity_):
        return identity.key(self._vm(identity_))[1]

    # power

    @errormap.translate
    def get_power_state(self, identity_):
        vm = self._vm(identity_)
        return power.power_state(vm, self._vmi(vm))

    @errormap.translate
    def set_power_state(self, identity_, state):
        resets.reset(self.cluster, state, self._vm(identity_), self._vmi)

    @errormap.translate
    def get_boot_progress(self, identity_):
        """``BootProgress`` (:mod:`sushy_kubevirt.kubevirt.bootprogress`)."""
        vm = self._vm(identity_)
        return bootprogress.boot_progress(vm, self._vmi(vm))

    # virtual media (sushy_kubevirt.drivers.vmedia does the work)

    @errormap.translate
    def set_boot_image(self, identity_, device, boot_image=None,
                       write_protected=True):
        if not self._kubevirt_vmedia():
            raise error.NotSupportedError(
                'Virtual media needs SUSHY_EMULATOR_VMEDIA_DRIVER = '
                "'kubevirt'")
        vmedia.set_boot_image(self, identity_, device, boot_image,
                              write_protected)

    # boot device

    @errormap.translate
    def get_boot_device(self, identity_):
        return boot.boot_device(self._vm(identity_))

    @errormap.translate
    def get_boot_targets(self, identity_):
        """The boot targets the VM has (or, Cd, can get) a device for."""
        vm = self._vm(identity_)
        return boot.targets(vm, firmware.boot_mode(vm) == 'UEFI',
                            media=self._kubevirt_vmedia())

    @errormap.translate
    def get_boot_source_override_enabled(self, identity_):
        """'Once', 'Continuous' or 'Disabled' (see ``kubevirt.boot``)."""
        return boot.override_enabled(self._vm(identity_))

    @errormap.translate
    def set_boot_device(self, identity_, boot_source, enabled=None):
        """Set the boot target, once or persistently.

        ``enabled`` is the PATCH's ``BootSourceOverrideEnabled`` (the
        stock route does not pass it; :func:`sushy_kubevirt.redfish.systems.
        patch_system` does). Once: one-time boot. Continuous:
        persistent (clears a pending Once). Disabled: cancels a pending
        Once and reads Disabled; the target must then be the current one
        or None. Not given: a pending Once stays a Once.
        """
        vm = self._vm(identity_)
        if enabled == boot.DISABLED:
            if boot_source not in (None, boot.boot_device(vm)):
                raise messages.RedfishError(
                    'PropertyValueConflict', 'Boot/BootSourceOverrideTarget',
                    'Boot/BootSourceOverrideEnabled', detail='Boot'
                    'SourceOverrideTarget cannot be changed together with '
                    'BootSourceOverrideEnabled Disabled')
            self._patch(identity_, boot.cancel_once_ops)
            return
        if boot_source == boot.CD and boot.CD not in boot.targets(
                vm, False, media=self._kubevirt_vmedia()):
            raise boot.NoSuchDevice(boot_source)
        if enabled is None:
            enabled = boot.override_enabled(vm)
        if enabled == boot.ONCE:
            uid = fields.get(self._vmi(vm), 'metadata', 'uid')
            self._patch(identity_, lambda vm: boot.boot_once_ops(
                vm, boot_source, uid))
        else:
            self._patch(identity_, lambda vm: boot.continuous_ops(
                vm, boot_source))

    @errormap.translate
    def get_http_boot_uri(self, identity_):
        """The recorded HttpBootUri (without userinfo), or None."""
        return fields.annotation(self._vm(identity_),
                                 HTTP_BOOT_URI_ANNOTATION)

    @errormap.translate
    def set_http_boot_uri(self, identity_, uri):
        """Record ``uri`` on the VM (None: remove it).

        The URI is checked as an image URL; its userinfo is never
        recorded (the virtual-media insert puts it into a Secret).
        """
        if uri is None:
            self._patch(identity_, lambda vm: fields.remove_annotation_ops(
                vm, HTTP_BOOT_URI_ANNOTATION))
            return
        try:
            url = imageurl.parse(uri, 'HttpBootUri')
        except imageurl.Invalid as exc:
            raise vmedia.refused(exc) from None
        self._patch(identity_, lambda vm: fields.annotation_ops(
            vm, HTTP_BOOT_URI_ANNOTATION, url.url))

    # firmware

    @errormap.translate
    def get_boot_mode(self, identity_):
        return firmware.boot_mode(self._vm(identity_))

    @errormap.translate
    def set_boot_mode(self, identity_, boot_mode):
        self._patch(identity_, lambda vm: firmware.boot_mode_ops(
            vm, boot_mode))

    @errormap.translate
    def get_secure_boot(self, identity_):
        return firmware.secure_boot(self._vm(identity_))

    @errormap.translate
    def set_secure_boot(self, identity_, secure):
        if not isinstance(secure, bool):
            raise messages.RedfishError(
                'PropertyValueTypeError', secure, 'SecureBootEnable',
                properties=['/SecureBootEnable'],
                detail='SecureBootEnable must be true or false')
        self._patch(identity_, lambda vm: firmware.secure_boot_ops(
            vm, secure))

    @errormap.translate
    def get_bios(self, identity_):
        vm = self._vm(identity_)
        return bios.bios(vm, self._vmi(vm))

    @errormap.translate
    def get_bios_settings(self, identity_):
        """The BIOS Settings object: current plus pending attributes."""
        vm = self._vm(identity_)
        return bios.settings(vm, self._vmi(vm))

    @errormap.translate
    def set_bios(self, identity_, attributes):
        """Store ``attributes`` as pending; they apply at the next boot.

        Password attributes go to the VM's BIOS Secret, after the VM
        patch (which also drops values an earlier version left in clear
        text in its annotations; they move into the Secret).
        """
        vm = self._vm(identity_)
        vmi = self._vmi(vm)
        secrets = dict(bios.clear_text(vm), **bios.passwords(attributes))
        self._patch(identity_, lambda vm: bios.set_bios_ops(
            vm, attributes, vmi))
        biossecrets.store(self.cluster, vm, secrets)

    @errormap.translate
    def reset_bios(self, identity_):
        """Restore the defaults at the next boot; passwords now (empty)."""
        vm = self._vm(identity_)
        vmi = self._vmi(vm)
        self._patch(identity_, lambda vm: bios.reset_bios_ops(vm, vmi))
        biossecrets.clear(self.cluster, vm)

    @errormap.translate
    def get_versions(self, identity_):
        """BiosVersion and the Manager's FirmwareVersion (firmwareupdate)."""
        vm = self._vm(identity_)
        return firmwareupdate.versions(vm, self._vmi(vm))

    # inventory

    @errormap.translate
    def get_total_memory(self, identity_):
        return inventory.total_memory_gib(self._vm(identity_))

    @errormap.translate
    def get_memory_mib(self, identity_):
        """Guest memory in MiB (the Memory resource); None when unset."""
        return inventory.memory_mib(self._vm(identity_))

    @errormap.translate
    def get_total_cpus(self, identity_):
        return inventory.total_cpus(self._vm(identity_))

    @errormap.translate
    def get_processors(self, identity_):
        return inventory.processors(self._vm(identity_))

    @errormap.translate
    def get_nics(self, identity_):
        vm = self._vm(identity_)
        return inventory.nics(vm, self._vmi(vm))

    @errormap.translate
    def get_network_adapter(self, identity_):
        """The VM's :class:`~sushy_kubevirt.kubevirt.netadapters.Adapter`."""
        vm = self._vm(identity_)
        return netadapters.adapter(vm, self._vmi(vm))

    def _datavolumes(self, vm):
        """The cached DataVolumes of ``vm``'s volumes; None when unwatched.

        Cached (0 API calls) only when DataVolumes are watched; a GET reads
        each once (memoized like the VM and VMI).
        """
        if not self.cluster.datavolumes:
            return None
        namespace = identity.key(vm)[0]
        names = [fields.get(v, 'dataVolume', 'name')
                 for v in fields.volumes(vm) if 'dataVolume' in v]
        found = (snapshot.memoized(('dv', namespace, name), functools.partial(
            self.cluster.get_datavolume, namespace, name)) for name in names)
        return [dv for dv in found if dv is not None]

    def _claims(self, vm):
        """The cached PVCs of ``vm``'s ``persistentVolumeClaim`` volumes.

        Each read once a GET (memoized); [] while the PVCs cannot be read
        (their disks' sizes are then unknown, as the start-up log says).
        """
        namespace = identity.key(vm)[0]
        found = []
        for name in disks.claim_names(vm):
            try:
                found.append(snapshot.memoized(
                    ('pvc', namespace, name), functools.partial(
                        self.cluster.get_claim, namespace, name)))
            except apierrors.Unreadable:
                return []
        return [pvc for pvc in found if pvc is not None]

    def _disks(self, vm):
        return disks.disks(vm, self._datavolumes(vm), self._vmi(vm),
                           self._claims(vm))

    @errormap.translate
    def get_disks(self, identity_):
        """The VM's disks (:class:`~sushy_kubevirt.kubevirt.disks.Disk`)."""
        return self._disks(self._vm(identity_))

    @errormap.translate
    def get_simple_storage_collection(self, identity_):
        return inventory.simple_storage(self._disks(self._vm(identity_)))

    @errormap.translate
    def get_etag(self, identity_):
        """The ETag of System ``identity_`` (kept: :mod:`.etagmemo`)."""
        return self._etags.etag(identity_)

    def kept_etag(self, identity_, reaches):
        """The kept ETag of System ``identity_`` while it holds, else None.

        No API call and no computing: :meth:`.etagmemo.ETags.kept`.
        """
        return self._etags.kept(identity_, reaches)

    def cached_etag(self, identity_):
        """The ETag of a System kept before, from the watch cache only.

        None when it was not kept or while the caches cannot say
        (:meth:`.etagmemo.ETags.cached`); every VM is reached.
        """
        try:
            return self._etags.cached(identity_)
        except (error.FishyError, apierrors.ApiError):
            return None

    def _etag(self, ident):
        vm = self._vm(ident)
        return vm, versions.etag(vm, self._vmi(vm),
                                 (self._datavolumes(vm) or []) +
                                 self._claims(vm))

    @errormap.translate
    def hold_etag(self, identity_, matches, request):
        """Hold ``request``'s writes to the state an If-Match names.

        ``matches(etag)`` tells whether the If-Match names ``etag``: the
        watch cache's ETag, else (the cache may lag behind another
        worker's write) one of live reads of the VM, VMI and DataVolumes;
        the VM it names is held (:mod:`.preconditions`). Returns None
        when held, else the current ETag (answer 412).
        """
        vm, current = self._etag(identity_)
        if not matches(current):
            vm, current = preconditions.live_etag(self.cluster, vm)
        if not matches(current):
            return current
        preconditions.hold(request, vm, current)
        return None
