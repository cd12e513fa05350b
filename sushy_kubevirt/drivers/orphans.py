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

"""Delete the virtual-media DataVolumes and Secrets no VM uses (orphans).

An InsertMedia creates its credentials Secret (if any) and DataVolume,
then attaches the DataVolume with a guarded patch of the VM. When it can
neither finish nor delete what it made (the API server fails in between
and refuses the clean-up, or the emulator process is killed), those are
orphans (:mod:`sushy_kubevirt.kubevirt.leftovers`). Every emulator
process runs a :class:`Collector` from the start of its Cluster: it
scans the cached DataVolumes (no API call) every few seconds, and lists
the tray Secrets by label, one list per namespace of the cached VMs, as
soon as it is cached and every ``sweep`` seconds (every ``grace``
seconds while one waits or the list failed). An orphan seen for
``grace`` seconds of this process's clock is deleted, and an orphan
DataVolume's Secret with it.

Safe across workers and replicas: before the delete, a guarded patch of
the VM records the orphan's fence key (the token of the InsertMedia that
made it) in :data:`~sushy_kubevirt.kubevirt.leftovers.
ANNOTATION_COLLECTING`, only if the VM still does not use it. That
InsertMedia attaches with a patch of the VM guarded by its
resourceVersion too, so one of the two sees the other: either the VM
uses it (the collector stops) or it is fenced (the InsertMedia answers
503 and the retry makes new objects). The fence stays after the delete
(the next attach lifts it): an InsertMedia still on its way must find
it. The delete carries the uid and the resourceVersion judged as
preconditions: an object made again or changed since is not deleted
(one CDI only updated is read again and judged anew). A VM deleted
takes its trays with it (ownerReferences): those are left to Kubernetes.
"""

import threading
import time

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kube import resources
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import leftovers
from sushy_kubevirt.kubevirt import media

#: Orphans deleted per scan at most (the next scan takes the rest).
PER_SCAN = 20
#: Seconds between two scans: ``grace`` / 2 within these bounds.
MIN_INTERVAL, MAX_INTERVAL = 0.5, 5.0
#: Deletes of one orphan whose resourceVersion keeps moving, at most.
DELETE_ATTEMPTS = 3
SECRETS = '%s=%s,%s' % (media.LABEL_MANAGED_BY, media.MANAGED_BY,
                        media.LABEL_DEVICE)
DATAVOLUME, SECRET = 'DataVolume', 'Secret'


def interval(grace):
    return min(MAX_INTERVAL, max(MIN_INTERVAL, grace / 2.0))


def _key(kind, obj):
    meta = obj['metadata']
    return kind, meta['namespace'], meta['name'], meta['uid']


class Collector:
    """Deletes the orphans of ``cluster``, on a thread of its own.

    :param grace: seconds an orphan is left (this process's clock).
    :param sweep: seconds between two lists of the tray Secrets.
    """

    def __init__(self, cluster, grace, sweep, logger):
        self._cluster = cluster
        self._grace = grace
        self._sweep = sweep
        self._logger = logger
        #: ``{(kind, namespace, name, uid): monotonic time first seen}``.
        self._seen = {}
        #: ``{namespace: (listed at, its tray Secrets, list failed)}``.
        self._lists = {}
        #: Namespaces refusing the list (said once).
        self._refused = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='vmedia orphans')

    def start(self):
        self._thread.start()
        return self

    def stop(self, timeout=None):
        self._stop.set()
        if self._thread.is_alive() and \
                self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self):
        wait = 0
        while not self._stop.wait(wait):
            wait = interval(self._grace)
            try:
                self.scan()
            except apierrors.ApiError as exc:
                self._logger.debug('Virtual media orphan scan: %s', exc)
            except Exception:
                self._logger.exception('Virtual media orphan scan failed')

    def _list_secrets(self, now):
        """The tray Secrets, listed again in each namespace when due.

        One list per namespace of the cached VMs (their owners): at once
        for a namespace not listed yet, then every ``sweep`` seconds, or
        ``grace`` while one of its Secrets waits or its list failed.
        """
        waiting = {ns for kind, ns, *_ in self._seen if kind == SECRET}
        namespaces = self._cluster.cached_namespaces()
        self._lists = {ns: self._lists[ns] for ns in namespaces
                       if ns in self._lists}
        for namespace in namespaces:
            listed, _secrets, failed = self._lists.get(
                namespace, (None, [], False))
            due = self._grace if failed or namespace in waiting \
                else self._sweep
            if listed is not None and now - listed < due:
                continue
            try:
                self._lists[namespace] = (now, self._cluster.list_objects(
                    resources.SECRET, namespace, SECRETS), False)
            except apierrors.ApiError as exc:
                refused = isinstance(exc, apierrors.Forbidden)
                self._lists[namespace] = (now, [], not refused)
                if refused and namespace not in self._refused:
                    self._refused.add(namespace)
                    self._logger.warning(
                        'Virtual media Secrets left by a failed InsertMedia '
                        'in namespace %s are not deleted: cannot %s',
                        namespace, exc.permission() or exc)
                elif not refused:
                    self._logger.debug('Virtual media Secrets of namespace '
                                       '%s not listed: %s', namespace, exc)
        return [secret for _listed, found, _failed in self._lists.values()
                for secret in found]

    def _orphan(self, kind, obj, vm):
        if kind == DATAVOLUME:
            return leftovers.orphan(obj, vm)
        dv = self._cluster.get_datavolume(
            obj['metadata']['namespace'],
            obj['metadata']['name'][:-len(media.SECRET_SUFFIX)])
        return leftovers.orphan_secret(obj, vm, dv)

    def _orphans(self, now):
        """``[(kind, obj, vm)]`` of the trays their VMs do not use."""
        found = []
        for kind, objs in ((DATAVOLUME, self._cluster.cached_datavolumes()),
                           (SECRET, self._list_secrets(now))):
            for obj in objs:
                labels = fields.get(obj, 'metadata', 'labels', default={})
                ref = media.owner(obj)
                if labels.get(media.LABEL_MANAGED_BY) != media.MANAGED_BY \
                        or ref is None:
                    continue
                vm = self._cluster.cached_vm(obj['metadata']['namespace'],
                                             ref[0])
                if vm is not None and self._orphan(kind, obj, vm):
                    found.append((kind, obj, vm))
        return found

    def scan(self, now=None):
        """Delete the orphans seen for ``grace`` seconds; return them."""
        now = time.monotonic() if now is None else now
        seen, deleted = {}, []
        for kind, obj, vm in self._orphans(now):
            key = _key(kind, obj)
            seen[key] = self._seen.get(key, now)
            if now - seen[key] >= self._grace and len(deleted) < PER_SCAN \
                    and not self._stop.is_set() and \
                    self._collect(kind, obj, vm):
                deleted.append(key)
        self._seen = {k: v for k, v in seen.items() if k not in deleted}
        return deleted

    def _collect(self, kind, obj, vm):
        """Fence the VM, then delete ``obj`` (a DataVolume's Secret too).

        The fence stays: an InsertMedia of that object may still be on
        its way; the next attach lifts it.
        """
        namespace, name = obj['metadata']['namespace'], \
            obj['metadata']['name']
        fence_key, used = leftovers.fence_key(obj), []

        def fence(vm):
            if not self._orphan(kind, obj, vm):
                used.append(True)
                return []
            return leftovers.collect_ops(vm, fence_key)
        guarded.guarded_patch(self._cluster, namespace, vm['metadata']['name'],
                              fence)
        if used:
            return False
        secret = kind == DATAVOLUME and fields.get(
            obj, 'spec', 'source', 'http', 'secretRef')
        # Read first: a Secret made again after the delete is not its.
        secret = secret and self._cluster.get_secret(namespace, secret)
        if not self._delete(kind, obj, vm):
            return True     # gone or changed: nothing more of it
        self._logger.info(
            'Virtual media %s %s/%s deleted: VM %s did not use it for %ss '
            '(an InsertMedia failed after creating it)', kind, namespace,
            name, vm['metadata']['name'], self._grace)
        if secret and fields.annotation(secret, media.ANNOTATION_INSERT) in (
                None, fields.annotation(obj, media.ANNOTATION_INSERT)):
            self._delete(SECRET, secret, None)
        return True

    def _delete(self, kind, obj, vm):
        """Delete ``obj`` at the version judged; True when deleted.

        When its resourceVersion moved (CDI's progress), it is read again
        and deleted if it still is that orphan (with ``vm``; with None,
        if it was not changed). Another process deleting it first: False.
        """
        namespace, name = obj['metadata']['namespace'], \
            obj['metadata']['name']
        delete, read = (
            (self._cluster.delete_datavolume,
             self._cluster.get_datavolume_live) if kind == DATAVOLUME else
            (self._cluster.delete_secret, self._cluster.get_secret))
        for _ in range(DELETE_ATTEMPTS):
            try:
                delete(namespace, name, preconditions={
                    'uid': media.uid(obj), 'resourceVersion': fields.get(
                        obj, 'metadata', 'resourceVersion')})
                return True
            except apierrors.NotFound:
                return False
            except apierrors.Conflict:
                now = read(namespace, name)
                if now is None or media.uid(now) != media.uid(obj) or \
                        vm is None or not self._orphan(kind, now, vm):
                    return False
                obj = now
        return False


def factory(cluster, settings, logger):
    """A ``Cluster.add_companion`` factory (None when the grace is 0).

    :param settings: the vmedia settings.
    """
    if not settings.orphan_grace:
        return None
    return lambda: Collector(cluster, settings.orphan_grace,
                             settings.orphan_sweep, logger).start()
