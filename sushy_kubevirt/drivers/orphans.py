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

"""Delete the virtual-media DataVolumes that no VM uses (orphans).

An InsertMedia creates its DataVolume, then attaches it with a guarded
patch of the VM. When the API server fails in between (a restart cuts
the patch, then refuses the clean-up), the DataVolume is left importing
and unreferenced. Every emulator process runs a :class:`Collector`: it
scans its watch cache (no API call) every few seconds and deletes a
tray DataVolume that its VM has not used for ``grace`` seconds of this
process's clock (:func:`sushy_kubevirt.kubevirt.media.orphan`), with its
credentials Secret.

Safe across workers and replicas: before the delete, a guarded patch of
the VM records the DataVolume's uid in
:data:`~sushy_kubevirt.kubevirt.media.ANNOTATION_COLLECTING`, only if the
VM still does not use it. An InsertMedia attaching that DataVolume also
patches the VM guarded by its resourceVersion, so one of the two sees
the other: either the VM uses it (the collector stops) or it is fenced
(the InsertMedia answers 503 and the retry makes a new one). The fence
stays after the delete (the next attach lifts it): an InsertMedia still
on its way must find it. The delete carries the uid as a precondition,
so a DataVolume made again under the same name is never deleted. A VM
deleted takes its trays with it (ownerReferences): those are left to
Kubernetes.
"""

import threading
import time

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import media

#: Orphans deleted per scan at most (the next scan takes the rest).
PER_SCAN = 20
#: Seconds between two scans: ``grace`` / 2 within these bounds.
MIN_INTERVAL, MAX_INTERVAL = 0.5, 5.0


def interval(grace):
    return min(MAX_INTERVAL, max(MIN_INTERVAL, grace / 2.0))


class Collector:
    """Scans ``cluster``'s cached DataVolumes on a thread of its own.

    :param grace: seconds an orphan is left (this process's clock).
    """

    def __init__(self, cluster, grace, logger):
        self._cluster = cluster
        self._grace = grace
        self._logger = logger
        #: ``{(namespace, name, uid): monotonic time first seen orphaned}``.
        self._seen = {}
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
        while not self._stop.wait(interval(self._grace)):
            try:
                self.scan()
            except apierrors.ApiError as exc:
                self._logger.debug('Virtual media orphan scan: %s', exc)
            except Exception:
                self._logger.exception('Virtual media orphan scan failed')

    def _orphans(self):
        """``[(dv, vm)]`` of the cached trays their VMs do not use."""
        found = []
        for dv in self._cluster.cached_datavolumes():
            labels = fields.get(dv, 'metadata', 'labels', default={})
            ref = media.owner(dv)
            if labels.get(media.LABEL_MANAGED_BY) != media.MANAGED_BY or \
                    ref is None:
                continue
            vm = self._cluster.cached_vm(dv['metadata']['namespace'], ref[0])
            if vm is not None and media.orphan(dv, vm):
                found.append((dv, vm))
        return found

    def scan(self, now=None):
        """Delete the orphans seen for ``grace`` seconds; return them."""
        now = time.monotonic() if now is None else now
        seen, deleted = {}, []
        for dv, vm in self._orphans():
            meta = dv['metadata']
            key = (meta['namespace'], meta['name'], meta['uid'])
            seen[key] = self._seen.get(key, now)
            if now - seen[key] >= self._grace and len(deleted) < PER_SCAN \
                    and not self._stop.is_set() and self._collect(dv, vm):
                deleted.append(key)
        self._seen = {k: v for k, v in seen.items() if k not in deleted}
        return deleted

    def _collect(self, dv, vm):
        """Fence the VM, then delete ``dv`` and its Secret.

        The fence stays: an InsertMedia of that DataVolume may still be
        on its way; the next attach lifts it.
        """
        namespace, name = dv['metadata']['namespace'], dv['metadata']['name']
        vm_name, dv_uid = vm['metadata']['name'], media.uid(dv)
        used = []

        def fence(vm):
            if not media.orphan(dv, vm):
                used.append(True)
                return []
            return media.collect_ops(vm, dv_uid)
        guarded.guarded_patch(self._cluster, namespace, vm_name, fence)
        if used:
            return False
        secret = fields.get(dv, 'spec', 'source', 'http', 'secretRef')
        # Read first: a Secret made again after the delete is not its.
        found = secret and self._cluster.get_secret(namespace, secret)
        try:
            self._cluster.delete_datavolume(namespace, name,
                                            preconditions={'uid': dv_uid})
        except (apierrors.NotFound, apierrors.Conflict):
            found = None    # another process deleted it first
        else:
            self._logger.info(
                'Virtual media DataVolume %s/%s deleted: VM %s did not use '
                'it for %ss (an InsertMedia failed after creating it)',
                namespace, name, vm_name, self._grace)
        if found:
            try:
                self._cluster.delete_secret(namespace, secret, preconditions={
                    'uid': media.uid(found)})
            except (apierrors.NotFound, apierrors.Conflict):
                pass
        return True


def factory(cluster, grace, logger):
    """A ``Cluster.add_companion`` factory (None when ``grace`` is 0)."""
    if not grace:
        return None
    return lambda: Collector(cluster, grace, logger).start()
