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
of every informer.
"""

import logging
import os
import threading
import time

from sushy_kubevirt import config
from sushy_kubevirt.kube import accounting as accounting_mod
from sushy_kubevirt.kube import api as api_mod
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import dispatcher as dispatcher_mod
from sushy_kubevirt.kube import informer as informer_mod
from sushy_kubevirt.kube import limiter
from sushy_kubevirt.kube import lister as lister_mod
from sushy_kubevirt.kube import resources as res
from sushy_kubevirt.kubevirt import identity

LOG = logging.getLogger(__name__)


def uuid_key(vm):
    """The 'uuid' index value of a VM: its Redfish id, lower-cased.

    :func:`sushy_kubevirt.kubevirt.identity.firmware_uuid`: the canonical
    firmware UUID, or KubeVirt's name-derived default when the field is
    still empty, so every System id is found in O(1).
    """
    return identity.firmware_uuid(vm).lower()


VM_INDEXERS = {
    'uuid': lambda vm: [uuid_key(vm)],
    'name': lambda vm: [vm['metadata']['name']],
}


class _Running:
    """What exists between the first use and :meth:`Cluster.stop`."""

    def __init__(self, api, dispatcher, informers, listers):
        self.api = api
        self.dispatcher = dispatcher
        self.informers = informers
        self.listers = listers

    def vmi_informers(self):
        return [i for (plural, _), i in self.informers.items()
                if plural == res.VMI.plural]


class Cluster:
    """Cached reads and live writes for VMs, VMIs and DataVolumes.

    Construction makes no connection and starts no thread; the first call
    does (also in each forked child). Reads return plain dicts that callers
    must treat as read-only; a missing object reads as None, and so does
    one in a namespace that is not served.

    :param timings: :class:`sushy_kubevirt.kube.reflector.Timings` (tests).
    """

    def __init__(self, settings, datavolumes=False, timings=None):
        self.settings = settings
        self.datavolumes = datavolumes
        self.timings = timings
        self.accounting = accounting_mod.Accounting()
        self._lock = threading.Lock()
        self._running = None
        self._pid = None
        self._vmi_handlers = []

    # lifecycle

    @property
    def _scopes(self):
        return self.settings.namespaces or (None,)

    @property
    def _resources(self):
        kinds = [res.VM, res.VMI]
        return kinds + [res.DATAVOLUME] if self.datavolumes else kinds

    def _make_api(self, watches=0):
        return api_mod.Api(
            client.make_api_client(self.settings, watches=watches),
            limiter.TokenBucket(self.settings.qps, self.settings.burst),
            self.accounting)

    def _start(self):
        api = self._make_api(len(self._scopes) * len(self._resources))
        dispatcher = dispatcher_mod.Dispatcher('dispatcher kube')
        informers, listers = {}, {}
        for resource in self._resources:
            is_vm = resource is res.VM
            selector = self.settings.label_selector if is_vm else None
            for namespace in self._scopes:
                informer = informer_mod.Informer(
                    api, resource, dispatcher, namespace,
                    label_selector=selector,
                    indexers=VM_INDEXERS if is_vm else None,
                    timings=self.timings)
                informers[resource.plural, namespace] = informer
                listers[resource.plural, namespace] = lister_mod.Lister(
                    informer, api, self.accounting, selector)
        running = _Running(api, dispatcher, informers, listers)
        for fn in self._vmi_handlers:
            self._add_vmi_handler(running, fn)
        dispatcher.start()
        for informer in informers.values():
            informer.start()
        self.accounting.report_health(
            lambda: [i.health() for i in informers.values()])
        LOG.info('Watching %s in %s', ', '.join(r.plural for r in
                                                self._resources),
                 ', '.join(self.settings.namespaces or ('all namespaces',)))
        return running

    def _run(self):
        running = self._running
        if running is not None and self._pid == os.getpid():
            return running
        with self._lock:
            if self._running is None or self._pid != os.getpid():
                # A forked child inherits no threads: start afresh.
                self._running = self._start()
                self._pid = os.getpid()
            return self._running

    def start(self):
        """Start watching now (otherwise the first call does)."""
        self._run()

    def wait_for_sync(self, timeout=None):
        """Wait until every informer has synced; return whether they did."""
        return all(i.wait_for_sync(timeout)
                   for i in self._run().informers.values())

    def stop(self, timeout=10.0):
        """End every thread and close every connection (idempotent).

        Waits at most ``timeout`` seconds in all: a reflector blocked in a
        request the API server holds ends only when that request does.
        """
        with self._lock:
            running, self._running = self._running, None
        if running is None:
            return
        self.accounting.report_health(None)
        for informer in running.informers.values():
            informer.reflector.stop(timeout=0)
        deadline = time.monotonic() + timeout
        for informer in running.informers.values():
            informer.stop(max(0.0, deadline - time.monotonic()))
        running.dispatcher.stop(max(0.0, deadline - time.monotonic()))
        running.api.close()

    def validate(self):
        """Check the configured namespaces exist and their VMs are readable.

        Uses its own short-lived connection and starts nothing.

        :raises sushy_kubevirt.config.ConfigError: naming the setting.
        """
        api = self._make_api()
        try:
            for namespace in self._scopes:
                self._validate(api, namespace)
        finally:
            api.close()

    def _validate(self, api, namespace):
        key = config.PREFIX + 'NAMESPACES'
        where = ('namespace %r' % namespace if namespace
                 else 'all namespaces')
        if namespace is not None:
            try:
                api.get(res.NAMESPACE, None, namespace)
            except apierrors.NotFound:
                raise config.ConfigError('%s: namespace %r does not exist'
                                         % (key, namespace)) from None
            except apierrors.Forbidden:
                LOG.debug('Cannot read namespace %s; checking its VMs only',
                          namespace)
            except apierrors.ApiError as exc:
                raise config.ConfigError('%s: cannot check %s: %s'
                                         % (key, where, exc)) from exc
        try:
            api.list(res.VM, namespace, self.settings.label_selector,
                     limit=1)
        except apierrors.ApiError as exc:
            raise config.ConfigError('%s: cannot list virtualmachines in '
                                     '%s: %s' % (key, where, exc)) from exc

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

    def _add_vmi_handler(self, running, fn):
        def served(kind, vmi):
            if self._running is not running:
                return  # stopped: a read would start it again
            meta = vmi['metadata']
            if self._vm_served(meta.get('namespace'), meta['name']):
                fn(kind, vmi)
        for informer in running.vmi_informers():
            informer.add_handler(served)

    # reads

    def _served(self, namespace):
        return (self.settings.namespaces is None
                or namespace in self.settings.namespaces)

    def _scope(self, namespace):
        return None if self.settings.namespaces is None else namespace

    def _lister(self, resource, namespace):
        return self._run().listers[resource.plural, self._scope(namespace)]

    def _informer(self, resource, namespace):
        return self._run().informers[resource.plural,
                                     self._scope(namespace)]

    def _vm_served(self, namespace, name):
        if not self._served(namespace):
            return False
        if not self.settings.label_selector:
            return True
        informer = self._informer(res.VM, namespace)
        return not informer.has_synced() or \
            informer.get(namespace, name) is not None

    def _get(self, resource, namespace, name):
        if not self._served(namespace):
            return None
        return self._lister(resource, namespace).get(namespace, name)

    def _all(self, resource, method, *args):
        result = []
        for scope in self._scopes:
            lister = self._run().listers[resource.plural, scope]
            result += getattr(lister, method)(*args)
        return result

    def list_vms(self):
        """Every served VM."""
        return self._all(res.VM, 'list')

    def get_vm(self, namespace, name):
        return self._get(res.VM, namespace, name)

    def find_vms_by_uuid(self, uuid):
        """Served VMs whose firmware UUID is ``uuid`` (normally 0 or 1).

        Case-insensitive, and a VM whose ``firmware.uuid`` is still empty
        is found under KubeVirt's name-derived default (see
        :func:`uuid_key`). An index lookup: no scan, no API call once
        synced.
        """
        return self._all(res.VM, 'by_index', 'uuid', uuid.lower())

    def find_vms_by_name(self, name):
        """Served VMs named ``name``, in any served namespace."""
        return self._all(res.VM, 'by_index', 'name', name)

    def get_vmi(self, namespace, name):
        """The VMI of served VM ``namespace/name``, or None."""
        if self.settings.label_selector and \
                self.get_vm(namespace, name) is None:
            return None
        return self._get(res.VMI, namespace, name)

    def get_datavolume(self, namespace, name):
        """From the cache when built with ``datavolumes=True``, else live."""
        if self.datavolumes:
            return self._get(res.DATAVOLUME, namespace, name)
        return self.get_datavolume_live(namespace, name)

    # live calls

    def _note(self, resource, namespace, obj):
        if self._served(namespace) and isinstance(obj, dict) and \
                obj.get('kind') not in (None, 'Status'):
            self._informer(resource, namespace).note_write(obj)
        return obj

    def get_vm_live(self, namespace, name):
        """GET the VM from the API server. :raises apierrors.NotFound:"""
        vm = self._run().api.get(res.VM, namespace, name)
        return self._note(res.VM, namespace, vm)

    def get_vmi_live(self, namespace, name):
        """GET the VMI from the API server; None when there is none.

        Overlaid on the cache like a write, so later reads are as recent.
        """
        try:
            vmi = self._run().api.get(res.VMI, namespace, name)
        except apierrors.NotFound:
            return None
        return self._note(res.VMI, namespace, vmi)

    def get_datavolume_live(self, namespace, name):
        """GET the DataVolume from the API server; None when absent."""
        try:
            dv = self._run().api.get(res.DATAVOLUME, namespace, name)
        except apierrors.NotFound:
            return None
        return self._note(res.DATAVOLUME, namespace, dv) \
            if self.datavolumes else dv

    def patch_vm(self, namespace, name, ops):
        """Apply the JSON patch ``ops`` (a list); return the patched VM."""
        vm = self._run().api.patch(res.VM, namespace, name, ops)
        return self._note(res.VM, namespace, vm)

    def vm_subresource(self, namespace, name, action, body=None):
        """PUT ``subresources.kubevirt.io/v1 .../{name}/{action}``."""
        return self._run().api.put_subresource(res.VM_ACTIONS, namespace,
                                               name, action, body)

    def vmi_subresource(self, namespace, name, action, body=None):
        return self._run().api.put_subresource(res.VMI_ACTIONS, namespace,
                                               name, action, body)

    def create_datavolume(self, namespace, body):
        dv = self._run().api.create(res.DATAVOLUME, namespace, body)
        return self._note(res.DATAVOLUME, namespace, dv) \
            if self.datavolumes else dv

    def delete_datavolume(self, namespace, name):
        answer = self._run().api.delete(res.DATAVOLUME, namespace, name)
        if self.datavolumes and self._served(namespace):
            if isinstance(answer, dict) and answer.get('kind') == \
                    'DataVolume':
                self._note(res.DATAVOLUME, namespace, answer)
            else:
                self._informer(res.DATAVOLUME, namespace).note_delete(
                    namespace, name)
        return answer

    def create_secret(self, namespace, body):
        return self._run().api.create(res.SECRET, namespace, body)

    def delete_secret(self, namespace, name):
        return self._run().api.delete(res.SECRET, namespace, name)
