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

"""The one object the drivers use to read and write the cluster.

Reads come from watch caches (live, and counted, until the cache of that
namespace has synced); writes and the ``*_live`` reads are live,
rate-limited and counted, and their results are overlaid on the cache so
the next read sees them. One dispatcher thread calls the event handlers
of every informer. Knows nothing of KubeVirt's meaning: the indexes of
the VMs are given by the caller.

A namespace whose reads cannot be answered (the API server refuses them,
or the namespace does not exist) raises
:class:`~sushy_kubevirt.kube.apierrors.Unreadable` on every read, never
an empty answer; the cause is logged once. A missing namespace is seen
when its VM list is empty (one GET of the namespace) and checked again
at most every ``NAMESPACE_RECHECK`` seconds while it is read. A live call
refused (403) in a served namespace where the VMs cannot be listed
either (one list, only then) raises ``Unreadable`` too: the namespace
was made forbidden, not one permission withdrawn.
"""

import contextlib
import dataclasses
import functools
import logging
import os
import threading
import time
import typing

from sushy_kubevirt import config
from sushy_kubevirt.kube import accounting
from sushy_kubevirt.kube import api
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import dispatcher
from sushy_kubevirt.kube import flatindex
from sushy_kubevirt.kube import informer
from sushy_kubevirt.kube import limiter
from sushy_kubevirt.kube import lister
from sushy_kubevirt.kube import resources

LOG = logging.getLogger(__name__)

#: Seconds between two checks of a namespace found missing, while read.
NAMESPACE_RECHECK = 5.0


#: Seconds a read of the Events waits for their first list.
EVENTS_SYNC_WAIT = 5.0


@dataclasses.dataclass(frozen=True)
class EventsCache:
    """Which core Events a Cluster caches, and how.

    :param keep: ``fn(event)``: whether to cache it (fixed over its life).
    :param transform: ``fn(event)``: what of it to cache.
    :param indexers: ``{index: fn(event) -> values}`` (:meth:`Cluster.
        events`).
    """

    keep: typing.Callable
    transform: typing.Callable
    indexers: dict


def _tagged(fn, plural, kind, obj):
    fn(kind, plural, obj)


class _Running:
    """What exists between the first use and :meth:`Cluster.stop`."""

    def __init__(self, live, events, informers, listers, vms, scopes):
        self.api = live
        self.dispatcher = events
        self.informers = informers
        self.listers = listers
        #: The VMs of every namespace, by index: a
        #: :class:`~sushy_kubevirt.kube.flatindex.FlatIndex`.
        self.vms = vms
        #: The scopes whose VM informer may not have synced yet.
        self.unsynced = list(scopes)
        #: What the companions made in this process (``stop(timeout)``).
        self.companions = []
        #: Namespaces found missing: ``{namespace: (NotFound, checked)}``.
        self.missing = {}
        self.missing_lock = threading.Lock()

    def unsynced_vms(self):
        """The scopes whose VM informer has not synced (a new list)."""
        self.unsynced = [s for s in self.unsynced if not self.informers[
            resources.VM.plural, s].has_synced()]
        return self.unsynced

    def vmi_informers(self):
        return [i for (plural, _), i in self.informers.items()
                if plural == resources.VMI.plural]


class Cluster:
    """Cached reads and live writes for VMs, VMIs, DataVolumes and PVCs.

    Construction makes no connection and starts no thread; the first call
    does (also in each forked child). Reads return plain dicts that callers
    must treat as read-only; a missing object reads as None, and so does
    one in a namespace that is not served.

    :param claims: watch the PersistentVolumeClaims too
        (:meth:`get_claim`).
    :param indexers: indexes of the cached VMs, ``{index: fn(vm) ->
        values}``, for :meth:`find_vms`.
    :param events: watch the core Events too: an :class:`EventsCache`
        saying which to keep, how and their indexes (:meth:`events`).
    :param configmaps: watch the ConfigMaps of this label selector too
        (:meth:`get_configmap`).
    :param timings: :class:`sushy_kubevirt.kube.reflector.Timings` (tests).
    """

    def __init__(self, settings, datavolumes=False, indexers=None,
                 timings=None, events=None, configmaps=None, claims=False):
        self.settings = settings
        self.datavolumes = datavolumes
        self.configmaps = configmaps
        self.claims = claims
        self.events_cache = events
        self.indexers = dict(indexers or {})
        self.timings = timings
        self.accounting = accounting.Accounting()
        self._lock = threading.Lock()
        self._running = None
        self._pid = None
        self._stopped = False
        self._vmi_handlers = []
        self._companions = []

    # lifecycle

    @property
    def _scopes(self):
        namespaces = self.settings.namespaces
        return tuple(filter(self._owned, namespaces)) if namespaces \
            else (None,)

    def _owned(self, namespace):
        """Whether this replica's shard (if any) owns ``namespace``."""
        shard = self.settings.shard
        return shard is None or shard.owns(namespace)

    def _keep(self):
        """The informers' filter: the shard's namespaces, cluster-wide."""
        if self.settings.shard is None or self.settings.namespaces:
            return None
        return lambda obj: self._owned(obj['metadata'].get('namespace'))

    def _keep_event(self):
        """The Events informers' filter: the caller's and the shard's."""
        shard, wanted = self._keep(), self.events_cache.keep
        if shard is None:
            return wanted
        return lambda obj: shard(obj) and wanted(obj)

    @property
    def _resources(self):
        kinds = [resources.VM, resources.VMI]
        if self.datavolumes:
            kinds.append(resources.DATAVOLUME)
        if self.configmaps:
            kinds.append(resources.CONFIGMAP)
        if self.claims:
            kinds.append(resources.PVC)
        if self.events_cache is not None:
            kinds.append(resources.EVENT)
        return kinds

    def _make_api(self, watches=0):
        return api.Api(
            client.make_api_client(self.settings, watches=watches),
            limiter.TokenBucket(self.settings.qps, self.settings.burst),
            self.accounting)

    def _prepare(self):
        """The informers, listers and dispatcher, not started yet."""
        live = self._make_api(len(self._scopes) * len(self._resources))
        events = dispatcher.Dispatcher('dispatcher kube')
        informers, listers = {}, {}
        vms = flatindex.FlatIndex(
            self.indexers, lambda namespace: informers[
                resources.VM.plural, self._scope(namespace)])
        running = _Running(live, events, informers, listers, vms,
                           self._scopes)
        for resource in self._resources:
            is_vm = resource is resources.VM
            selector = self.settings.label_selector if is_vm else \
                self.configmaps if resource is resources.CONFIGMAP else None
            is_event = resource is resources.EVENT
            for namespace in self._scopes:
                cache = informer.Informer(
                    live, resource, events, namespace,
                    label_selector=selector,
                    indexers=vms.indices if is_vm else
                    self.events_cache.indexers if is_event else None,
                    on_replace=self._on_vm_list(running, namespace)
                    if is_vm and namespace else None,
                    timings=self.timings,
                    keep=self._keep_event() if is_event else self._keep(),
                    transform=self.events_cache.transform if is_event
                    else informer.strip)
                informers[resource.plural, namespace] = cache
                listers[resource.plural, namespace] = lister.Lister(
                    cache, live, self.accounting, selector)
        for fn in self._vmi_handlers:
            self._add_vmi_handler(running, fn)
        return running

    def _launch(self, running):
        running.dispatcher.start()
        for cache in running.informers.values():
            cache.start()
        informers = list(running.informers.values())
        self.accounting.report_health(
            lambda: [i.health() for i in informers],
            lambda: self._namespace_health(running))
        for factory in self._companions:
            running.companions.append(factory())
        shard = self.settings.shard
        LOG.info('Watching %s in %s%s', ', '.join(r.plural for r in
                                                  self._resources),
                 ', '.join(self.settings.namespaces and self._scopes
                           or ('all namespaces',)),
                 ' (shard %s: the namespaces it owns)' % shard
                 if shard else '')

    # missing namespaces

    def _on_vm_list(self, running, namespace):
        """The VM informer's ``on_replace``: check an empty namespace.

        kube lists nothing in a namespace that does not exist either.
        """
        def replaced(objs):
            if objs:
                self._namespace_found(running, namespace)
            else:
                self._check_namespace(running, namespace)
        return replaced

    def _check_namespace(self, running, namespace):
        try:
            running.api.get(resources.NAMESPACE, None, namespace)
        except apierrors.NotFound as exc:
            with running.missing_lock:
                known = namespace in running.missing
                running.missing[namespace] = (exc, time.monotonic())
            if not known:
                LOG.error('Namespace %s does not exist: its systems are '
                          'not served (Redfish 503) until it is created '
                          '(%s)', namespace,
                          config.PREFIX + 'NAMESPACES')
            return
        except apierrors.ApiError as exc:
            # Forbidden (no "get namespaces"), unreachable...: the
            # namespace cannot be told missing; serve what the lists say.
            LOG.debug('Cannot check namespace %s exists: %s', namespace,
                      exc)
        self._namespace_found(running, namespace)

    def _namespace_found(self, running, namespace):
        with running.missing_lock:
            gone = running.missing.pop(namespace, None)
        if gone is not None:
            LOG.info('Namespace %s exists now: its systems are served',
                     namespace)

    def _check_scope(self, running, scope):
        """Raise :class:`~apierrors.Unreadable` if ``scope`` is missing."""
        if scope is None or not running.missing:
            return
        with running.missing_lock:
            exc, checked = running.missing.get(scope, (None, None))
            recheck = exc is not None and \
                time.monotonic() - checked >= NAMESPACE_RECHECK
            if recheck:
                running.missing[scope] = (exc, time.monotonic())
        if recheck:
            self._check_namespace(running, scope)
            exc = running.missing.get(scope, (None,))[0]
        if exc is not None:
            raise apierrors.Unreadable('namespace %s does not exist'
                                       % scope, exc, scope)

    def _run(self):
        running = self._running
        if running is not None and self._pid == os.getpid():
            return running
        with self._lock:
            if self._stopped:
                # A late reader (a background check, a handler) must not
                # start the watches of a stopped Cluster again.
                raise apierrors.Unavailable('the Cluster is stopped')
            if self._running is None or self._pid != os.getpid():
                # A forked child inherits no threads: start afresh. The
                # handlers check ``_running`` (a stopped Cluster's are
                # dropped): it is set before the first event can come.
                self._running = self._prepare()
                self._pid = os.getpid()
                self._launch(self._running)
            return self._running

    def start(self):
        """Start watching now (otherwise the first call does)."""
        self._run()

    def add_companion(self, factory):
        """Run ``factory()`` in each process the Cluster starts in.

        Called right after the informers start (so after a fork too);
        what it returns is stopped with the Cluster (``stop(timeout)``).
        Add companions before the first use.
        """
        self._companions.append(factory)

    def _namespace_health(self, running):
        """``[(namespace, reason)]`` of every served namespace.

        The reason is '' when it is readable, else ``forbidden`` (the API
        server refuses a list or watch) or ``missing``.
        """
        result = []
        for scope in self._scopes:
            refused = any(reader.refusal() is not None
                          for (plural, ns), reader in running.listers.items()
                          if ns == scope and plural != resources.EVENT.plural)
            reason = 'forbidden' if refused else \
                'missing' if scope in running.missing else ''
            result.append((scope or '', reason))
        return result

    def health(self):
        """The :class:`~.accounting.Health` of every informer, no API call.

        Starts the watches on first use, as a read does.
        """
        return [i.health() for i in self._run().informers.values()]

    def wait_for_sync(self, timeout=None):
        """Wait until every informer has synced; return whether they did."""
        return all(i.wait_for_sync(timeout)
                   for i in self._run().informers.values())

    def stop(self, timeout=10.0):
        """End every thread and close every connection (idempotent).

        Waits at most ``timeout`` seconds in all: a reflector blocked in a
        request the API server holds ends only when that request does.
        A stopped Cluster stays stopped: a later read raises
        :class:`~sushy_kubevirt.kube.apierrors.Unavailable`.
        """
        with self._lock:
            self._stopped = True
            running, self._running = self._running, None
        if running is None:
            return
        self.accounting.report_health(None)
        for cache in running.informers.values():
            cache.reflector.stop(timeout=0)
        deadline = time.monotonic() + timeout
        for companion in running.companions:
            companion.stop(max(0.0, deadline - time.monotonic()))
        for cache in running.informers.values():
            cache.stop(max(0.0, deadline - time.monotonic()))
        running.dispatcher.stop(max(0.0, deadline - time.monotonic()))
        running.api.close()

    def validate(self):
        """Check the API server answers and the namespaces can be read.

        Uses its own short-lived connection and starts nothing.

        :raises sushy_kubevirt.config.ConfigError: naming the setting at
            fault, or :class:`~sushy_kubevirt.kube.client.NoCluster` naming
            the API server's address when it cannot be reached.
        """
        live = self._make_api()
        try:
            for namespace in self._scopes:
                self._validate(live, namespace)
        except apierrors.Unavailable as exc:
            raise client.NoCluster(
                'Cannot reach the Kubernetes API server at %s (from %s): %s'
                % (live.server, self._source(), exc.detail)) from exc
        finally:
            live.close()

    def validate_namespace(self, namespace, key):
        """Check namespace ``namespace`` (setting ``key``) exists.

        Uses its own short-lived connection. A refused or failed check
        passes (:meth:`validate` reports an unreachable server).

        :raises sushy_kubevirt.config.ConfigError: it does not exist.
        """
        live = self._make_api()
        try:
            live.get(resources.NAMESPACE, None, namespace)
        except apierrors.NotFound:
            raise config.ConfigError('%s: namespace %r does not exist'
                                     % (key, namespace)) from None
        except apierrors.ApiError as exc:
            LOG.debug('Cannot check namespace %s exists: %s', namespace,
                      exc)
        finally:
            live.close()

    def _source(self):
        if self.settings.kubeconfig is None and \
                os.environ.get('KUBERNETES_SERVICE_HOST'):
            return 'the in-cluster service account'
        source = '%sKUBECONFIG %s' % (
            config.PREFIX, self.settings.kubeconfig or '~/.kube/config')
        if self.settings.context:
            source += ', context %s' % self.settings.context
        return source

    def _validate(self, live, namespace):
        key = config.PREFIX + 'NAMESPACES'
        where = ('namespace %r' % namespace if namespace
                 else 'all namespaces')
        if namespace is not None:
            try:
                live.get(resources.NAMESPACE, None, namespace)
            except apierrors.NotFound:
                raise config.ConfigError('%s: namespace %r does not exist'
                                         % (key, namespace)) from None
            except apierrors.Forbidden:
                LOG.debug('Cannot read namespace %s; checking its VMs only',
                          namespace)
            except apierrors.Unavailable:
                raise
            except apierrors.ApiError as exc:
                raise config.ConfigError('%s: cannot check %s: %s'
                                         % (key, where, exc)) from exc
        try:
            live.list(resources.VM, namespace, self.settings.label_selector,
                      limit=1)
        except apierrors.Forbidden as exc:
            raise config.ConfigError(
                '%s: the API server refuses to %s (grant it to the '
                "emulator's service account): %s"
                % (key, exc.permission(), exc.message)) from exc
        except apierrors.Unavailable:
            raise
        except apierrors.ApiError as exc:
            raise config.ConfigError('%s: cannot list virtualmachines in '
                                     '%s: %s' % (key, where, exc)) from exc
        if self.claims:
            self._validate_claims(live, namespace, where)

    def _validate_claims(self, live, namespace, where):
        """Warn when the PVCs cannot be listed (their sizes go unknown)."""
        try:
            live.list(resources.PVC, namespace, limit=1)
        except apierrors.Forbidden as exc:
            LOG.warning('The API server refuses to %s: the disks of '
                        'stopped VMs on PersistentVolumeClaims in %s are '
                        'served with an unknown size (grant it to the '
                        "emulator's service account)",
                        exc.permission() or 'list persistentvolumeclaims',
                        where)
        except apierrors.Unavailable:
            raise
        except apierrors.ApiError as exc:
            LOG.warning('Cannot list persistentvolumeclaims in %s: %s',
                        where, exc)

    def add_vmi_handler(self, fn):
        """Call ``fn(event_type, vmi)`` on changes of served VMs' VMIs.

        Called from the Cluster's one dispatcher thread, in watch order per
        VMI; must be quick (it delays every other event). A handler added
        once the VMIs are cached first gets them as ADDED, as client-go's
        ``AddEventHandler`` replays the current state.
        """
        with self._lock:
            self._vmi_handlers.append(fn)
            running = self._running
            if running is not None and self._pid == os.getpid():
                self._add_vmi_handler(running, fn)

    def add_handler(self, fn, timeout=None):
        """Call ``fn(event_type, plural, obj)`` on changes of every kind.

        Waits (at most ``timeout`` seconds) until every informer has
        synced; then the cached objects are replayed to ``fn`` as ADDED,
        followed by one ``fn('SYNCED', None, None)``, then every later
        change, on the one dispatcher thread. ``plural`` names the
        resource (``virtualmachines``...). VMIs of VMs not served are
        skipped.

        :returns: whether the informers synced (``fn`` was added).
        """
        if not self.wait_for_sync(timeout):
            return False
        running = self._run()
        with contextlib.ExitStack() as held:
            # No informer queues an event until the marker is queued: a
            # change is never seen before the end of the replay.
            for cache in running.informers.values():
                held.enter_context(cache.held())
            for (plural, _), cache in running.informers.items():
                each = functools.partial(_tagged, fn, plural)
                cache.add_handler(self._served_vmis(running, each)
                                  if plural == resources.VMI.plural else each)
            running.dispatcher.put((functools.partial(fn, 'SYNCED'),), None,
                                   None)
        return True

    def _served_vmis(self, running, fn):
        def served(kind, vmi):
            if self._running is not running:
                return  # stopped: a read would start it again
            meta = vmi['metadata']
            if self._vm_served(meta.get('namespace'), meta['name']):
                fn(kind, vmi)
        return served

    def _add_vmi_handler(self, running, fn):
        served = self._served_vmis(running, fn)
        for cache in running.vmi_informers():
            cache.add_handler(served)

    # reads

    def _served(self, namespace):
        return (self.settings.namespaces is None
                or namespace in self.settings.namespaces) and \
            self._owned(namespace)

    def _scope(self, namespace):
        return None if self.settings.namespaces is None else namespace

    def _lister(self, resource, namespace):
        running = self._run()
        scope = self._scope(namespace)
        self._check_scope(running, scope)
        return running.listers[resource.plural, scope]

    def _informer(self, resource, namespace):
        return self._run().informers[resource.plural,
                                     self._scope(namespace)]

    def _vm_served(self, namespace, name):
        """Whether VM ``namespace/name`` is served (no API call).

        False while its namespace cannot be read (a handler would read it).
        """
        if not self._served(namespace):
            return False
        cache = self._informer(resources.VM, namespace)
        if cache.refusal() is not None or \
                self._scope(namespace) in self._run().missing:
            return False
        if not self.settings.label_selector:
            return True
        return not cache.has_synced() or \
            cache.get(namespace, name) is not None

    def _get(self, resource, namespace, name):
        if not self._served(namespace):
            return None
        return self._lister(resource, namespace).get(namespace, name)

    def _all(self, resource, method, *args, partial=False):
        """Concatenate the answers of every served namespace.

        With ``partial``: ``(answers, [Unreadable of each namespace that
        cannot be read])``, raising only when none can be read.

        :raises apierrors.Unreadable: a namespace cannot be read.
        """
        running = self._run()
        result, errors = [], []
        for scope in self._scopes:
            try:
                result += self._answer(running, resource, scope, method,
                                       *args)
            except apierrors.Unreadable as exc:
                errors.append(exc)
        if partial:
            if len(errors) == len(self._scopes):
                raise errors[0]
            return result, errors
        if errors:
            raise errors[0]
        return result

    def _answer(self, running, resource, scope, method, *args):
        """``method(*args)`` of the lister of ``resource`` in ``scope``.

        :raises apierrors.Unreadable: ``scope`` cannot be read.
        """
        reader = running.listers[resource.plural, scope]
        self._check_scope(running, scope)
        live = not reader.informer.has_synced()
        answer = getattr(reader, method)(*args)
        if method == 'list' and not answer and scope:
            if live:
                # kube lists nothing in a namespace that does not
                # exist either (the informer checks its own lists).
                self._check_namespace(running, scope)
            self._check_scope(running, scope)
        return answer

    def _readable(self, running, scope):
        """Raise :class:`~apierrors.Unreadable` if ``scope``'s VMs are not."""
        self._check_scope(running, scope)
        running.listers[resources.VM.plural, scope].check()

    def list_vms(self):
        """Every served VM."""
        return self._all(resources.VM, 'list')

    def list_readable_vms(self):
        """``(VMs, [Unreadable])``: every VM that can be read, and why not.

        The VMs of every namespace that can be read, and the
        ``Unreadable`` of each other one.

        :raises apierrors.Unreadable: no namespace can be read.
        """
        return self._all(resources.VM, 'list', partial=True)

    def _synced(self, running, resource, scope):
        """The informer of ``resource`` in ``scope`` if it can answer."""
        cache = running.informers.get((resource.plural, scope))
        if cache is None or not cache.has_synced() or \
                cache.refusal() is not None or scope in running.missing:
            return None
        return cache

    def cached_datavolumes(self):
        """The cached DataVolumes of every namespace that can be read.

        No API call and not counted (for background scans): a namespace
        whose cache has not synced, or cannot be read, is skipped. []
        unless built with ``datavolumes=True``.
        """
        if not self.datavolumes:
            return []
        running = self._run()
        result = []
        for scope in self._scopes:
            cache = self._synced(running, resources.DATAVOLUME, scope)
            result += cache.list() if cache is not None else []
        return result

    def cached_namespaces(self):
        """The cached VMs' namespaces, as :meth:`cached_datavolumes`."""
        running = self._run()
        found = set()
        for scope in self._scopes:
            cache = self._synced(running, resources.VM, scope)
            found.update(vm['metadata'].get('namespace')
                         for vm in (cache.list() if cache is not None
                                    else ()))
        return sorted(found)

    def cached_vm(self, namespace, name):
        """VM ``namespace/name`` as cached, like :meth:`cached_datavolumes`.

        None when absent, not served or its cache cannot answer.
        """
        if not self._served(namespace):
            return None
        cache = self._synced(self._run(), resources.VM,
                             self._scope(namespace))
        return cache.get(namespace, name) if cache is not None else None

    def get_vm(self, namespace, name):
        return self._get(resources.VM, namespace, name)

    def events(self, namespace, index, value):
        """The cached Events of ``namespace`` whose ``index`` has ``value``.

        No API call; ``namespace`` must be served.

        :raises apierrors.Unavailable: the Events are not watched, or
            their cache has not synced within :data:`EVENTS_SYNC_WAIT`
            seconds or cannot be read (the server refuses it).
        """
        if self.events_cache is None or not self._served(namespace):
            raise apierrors.Unavailable('the Events of %s are not watched'
                                        % namespace)
        cache = self._informer(resources.EVENT, namespace)
        if cache.refusal() is not None or \
                not cache.wait_for_sync(EVENTS_SYNC_WAIT) or \
                cache.refusal() is not None:
            raise apierrors.Unavailable('the Events of namespace %s cannot '
                                        'be read' % namespace)
        self.accounting.cache('list', resources.EVENT.plural)
        return [e for e in cache.by_index(index, value)
                if e['metadata'].get('namespace') == namespace]

    def create_event(self, namespace, body):
        """POST a core Event; the created Event is overlaid on the cache."""
        made = self._run().api.create(resources.EVENT, namespace, body)
        if self.events_cache is not None and self._served(namespace) and \
                self.events_cache.keep(made):
            self._informer(resources.EVENT, namespace).note_write(made)
        return made

    def find_vms(self, index, value):
        """Served VMs whose ``index`` (see ``indexers``) yields ``value``.

        One probe of the index every namespace's cache shares, then a
        read of each match: no scan, no API call once synced, the same
        cost however many namespaces are served. A namespace whose cache
        has not synced is read live. A match in one namespace is an answer
        even while another cannot be read; only a lookup with no match
        checks that every namespace can be read (no probe, no API call).

        :raises apierrors.Unreadable: no match, and a namespace cannot be
            read.
        """
        running = self._run()
        unsynced = running.unsynced_vms()
        found, errors = [], []
        for cache, vms in running.vms.find(index, value).items():
            if cache.namespace in unsynced:
                continue  # read live below
            try:
                self._readable(running, cache.namespace)
                found += vms
            except apierrors.Unreadable as exc:
                errors.append(exc)
        for scope in unsynced:
            try:
                found += self._answer(running, resources.VM, scope,
                                      'by_index', index, value)
            except apierrors.Unreadable as exc:
                errors.append(exc)
        if not found:
            if errors:
                raise errors[0]
            for scope in self._scopes:
                if scope not in unsynced:
                    self._readable(running, scope)
        if len(unsynced) < len(self._scopes):
            self.accounting.cache('list', resources.VM.plural)
        return found

    def _rendered_with(self):
        """The watched resources a System is rendered from, but the VMs."""
        return [resources.VMI] + \
            [resources.DATAVOLUME] * bool(self.datavolumes) + \
            [resources.PVC] * bool(self.claims)

    def generation(self, namespace):
        """What changes with the cached VMs, VMIs, DataVolumes and PVCs.

        Every change of a cached VM, or of a cached VMI, DataVolume or
        PVC of ``namespace``, changes it (no API call). None while the
        caches cannot say: not started in this process, a VM cache
        unsynced, one of the others refused, unsynced or overlaid by a
        write, the namespace missing or not served.
        """
        running = self._running
        if running is None or self._pid != os.getpid() or \
                not self._served(namespace) or running.unsynced_vms():
            return None
        scope = self._scope(namespace)
        try:
            self._readable(running, scope)
        except apierrors.Unreadable:
            return None
        found = [namespace, running.vms.generation()]
        for resource in self._rendered_with():
            cache = running.informers[resource.plural, scope]
            if not cache.has_synced() or cache.refusal() is not None or \
                    cache.has_overlay():
                return None
            found.append(cache.store.indices.generation)
        return None if found[1] is None else tuple(found)

    def get_vmi(self, namespace, name):
        """The VMI of served VM ``namespace/name``, or None."""
        if self.settings.label_selector and \
                self.get_vm(namespace, name) is None:
            return None
        return self._get(resources.VMI, namespace, name)

    def get_datavolume(self, namespace, name):
        """From the cache when built with ``datavolumes=True``, else live."""
        if self.datavolumes:
            return self._get(resources.DATAVOLUME, namespace, name)
        return self.get_datavolume_live(namespace, name)

    def get_configmap(self, namespace, name):
        """From the cache when built with ``configmaps``, else None."""
        if not self.configmaps:
            return None
        return self._get(resources.CONFIGMAP, namespace, name)

    def get_claim(self, namespace, name):
        """The cached PVC ``namespace/name`` (built with ``claims=True``).

        None when absent or not served.

        :raises apierrors.Unreadable: the PVCs cannot be read (no
            ``list``/``watch persistentvolumeclaims``).
        """
        if not self.claims:
            return None
        return self._get(resources.PVC, namespace, name)

    # live calls

    def _live(self, method, resource, namespace, *args, **kwargs):
        """``api.<method>(resource, namespace, ...)``.

        A 403 in a served namespace whose VMs cannot be listed either
        raises ``Unreadable``.
        """
        running = self._run()
        call = getattr(running.api, method)
        try:
            return call(resource, namespace, *args, **kwargs)
        except apierrors.Forbidden as exc:
            refusal = self._forbidden_namespace(running, namespace)
            if refusal is None:
                raise
            raise apierrors.Unreadable(
                'the API server refuses to %s' % (
                    refusal.permission() or 'list virtualmachines in %s'
                    % namespace), refusal, namespace) from exc

    def _forbidden_namespace(self, running, namespace):
        """The 403 of a VM list in served ``namespace``, else None."""
        if namespace is None or not self._served(namespace):
            return None
        try:
            running.api.list(resources.VM, namespace,
                             self.settings.label_selector, limit=1)
        except apierrors.Forbidden as exc:
            return exc
        except apierrors.ApiError:
            return None
        return None

    def _note(self, resource, namespace, obj):
        if self._served(namespace) and isinstance(obj, dict) and \
                obj.get('kind') not in (None, 'Status'):
            cache = self._informer(resource, namespace)
            if resource is resources.VM:
                self._run().vms.note_write(cache, obj)
            else:
                cache.note_write(obj)
        return obj

    def get_vm_live(self, namespace, name):
        """GET the VM from the API server. :raises apierrors.NotFound:"""
        vm = self._live('get', resources.VM, namespace, name)
        return self._note(resources.VM, namespace, vm)

    def get_vmi_live(self, namespace, name):
        """GET the VMI from the API server; None when there is none.

        Overlaid on the cache like a write, so later reads are as recent.
        """
        try:
            vmi = self._live('get', resources.VMI, namespace, name)
        except apierrors.NotFound:
            return None
        return self._note(resources.VMI, namespace, vmi)

    def get_datavolume_live(self, namespace, name):
        """GET the DataVolume from the API server; None when absent."""
        try:
            dv = self._live('get', resources.DATAVOLUME, namespace,
                            name)
        except apierrors.NotFound:
            return None
        return self._note(resources.DATAVOLUME, namespace, dv) \
            if self.datavolumes else dv

    def get_claim_live(self, namespace, name):
        """GET the PVC from the API server; None when absent."""
        try:
            pvc = self._live('get', resources.PVC, namespace, name)
        except apierrors.NotFound:
            return None
        return self._note(resources.PVC, namespace, pvc) \
            if self.claims else pvc

    def patch_vm(self, namespace, name, ops):
        """Apply the JSON patch ``ops`` (a list); return the patched VM."""
        vm = self._live('patch', resources.VM, namespace, name, ops)
        return self._note(resources.VM, namespace, vm)

    def vm_subresource(self, namespace, name, action, body=None):
        """PUT ``subresources.kubevirt.io/v1 .../{name}/{action}``."""
        return self._live('put_subresource', resources.VM_ACTIONS,
                          namespace, name, action, body)

    def vmi_subresource(self, namespace, name, action, body=None):
        return self._live('put_subresource', resources.VMI_ACTIONS,
                          namespace, name, action, body)

    def create_datavolume(self, namespace, body):
        dv = self._live('create', resources.DATAVOLUME, namespace,
                        body)
        return self._note(resources.DATAVOLUME, namespace, dv) \
            if self.datavolumes else dv

    def delete_datavolume(self, namespace, name, preconditions=None):
        """DELETE; ``preconditions`` as :meth:`Api.delete`'s."""
        answer = self._live('delete', resources.DATAVOLUME, namespace, name,
                            preconditions=preconditions)
        if self.datavolumes and self._served(namespace):
            if isinstance(answer, dict) and answer.get('kind') == \
                    'DataVolume':
                self._note(resources.DATAVOLUME, namespace, answer)
            else:
                self._informer(resources.DATAVOLUME, namespace).note_delete(
                    namespace, name)
        return answer

    def get_object(self, resource, namespace, name):
        """GET any object live. :raises apierrors.NotFound:"""
        return self._run().api.get(resource, namespace, name)

    def list_objects(self, resource, namespace, label_selector=None):
        """Every object of a live list (all pages)."""
        items, token = [], None
        while True:
            page = self._run().api.list(resource, namespace, label_selector,
                                        continue_token=token, limit=500)
            items += page.get('items') or []
            token = (page.get('metadata') or {}).get('continue')
            if not token:
                return items

    def create_object(self, resource, namespace, body):
        return self._run().api.create(resource, namespace, body)

    def replace_object(self, resource, namespace, name, body):
        """PUT, guarded by ``body``'s resourceVersion.

        :raises apierrors.Conflict: the object changed since it was read.
        """
        return self._run().api.replace(resource, namespace, name, body)

    def create_configmap(self, namespace, body):
        made = self._live('create', resources.CONFIGMAP, namespace, body)
        return self._note(resources.CONFIGMAP, namespace, made) \
            if self.configmaps else made

    def replace_configmap(self, namespace, name, body):
        """PUT, guarded by ``body``'s resourceVersion."""
        made = self._live('replace', resources.CONFIGMAP, namespace, name,
                          body)
        return self._note(resources.CONFIGMAP, namespace, made) \
            if self.configmaps else made

    def delete_configmap(self, namespace, name, preconditions=None):
        """DELETE; ``preconditions`` as :meth:`Api.delete`'s."""
        answer = self._live('delete', resources.CONFIGMAP, namespace, name,
                            preconditions=preconditions)
        if self.configmaps and self._served(namespace):
            self._informer(resources.CONFIGMAP, namespace).note_delete(
                namespace, name)
        return answer

    def create_secret(self, namespace, body):
        return self._live('create', resources.SECRET, namespace, body)

    def get_secret(self, namespace, name):
        """GET a Secret from the API server; None when absent."""
        try:
            return self._live('get', resources.SECRET, namespace, name)
        except apierrors.NotFound:
            return None

    def list_secrets(self, namespace, label_selector):
        """The Secrets of ``namespace`` with those labels (one page)."""
        return self._live('list', resources.SECRET, namespace,
                          label_selector=label_selector)['items']

    def list_secrets_page(self, namespace, label_selector, limit,
                          continue_token=None):
        """``(items, continue token or None)``: one page of a live list."""
        page = self._run().api.list(resources.SECRET, namespace,
                                    label_selector=label_selector,
                                    limit=limit,
                                    continue_token=continue_token)
        return page.get('items') or [], \
            (page.get('metadata') or {}).get('continue') or None

    def patch_secret(self, namespace, name, ops):
        return self._live('patch', resources.SECRET, namespace, name, ops)

    def delete_secret(self, namespace, name, preconditions=None):
        return self._live('delete', resources.SECRET, namespace, name,
                          preconditions=preconditions)
