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

"""Each System's ETag, computed again only when the watch cache changed.

Finding a System's VM by its id and reading its VMI and DataVolumes is
most of what a GET answered from its kept bytes
(:mod:`sushy_kubevirt.redfish.rendered`) costs. A process keeps each id's
last ETag with the watch cache's
:meth:`~sushy_kubevirt.kube.cluster.Cluster.generation` of the VM's
namespace, read before the ETag was computed; while it is the same (no
cached VM, and no VMI or DataVolume of that namespace, has changed since)
and the request's account reaches the VM, the kept ETag is the answer.
Only canonical ids are kept (which VM another id names may depend on
the account). Anything else computes the ETag as before.
"""

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.kubevirt import identity

#: Ids whose ETag a process keeps at most (then it starts afresh).
LIMIT = 200000


class ETags:
    """``compute(id) -> (vm, etag)`` of a Cluster ``cluster()``, kept."""

    def __init__(self, cluster, compute):
        self._cluster = cluster
        self._compute = compute
        #: ``{id: (generation, etag, namespace, labels)}``.
        self._kept = {}

    @staticmethod
    def _holds(kept, generation, reaches=lookup.reaches):
        return generation is not None and generation == kept[0] and \
            reaches(kept[2], kept[3])

    def kept(self, ident, reaches):
        """The kept ETag of System ``ident`` while it holds, else None.

        ``reaches(namespace, labels)`` says whether the request's account
        reaches the VM. Reads only the watch cache: it computes nothing.
        """
        kept = self._kept.get(ident)
        if kept is not None and self._holds(
                kept, self._cluster().generation(kept[2]), reaches):
            return kept[1]
        return None

    def cached(self, ident):
        """:meth:`etag` of a System kept before, else None.

        None too while its namespace's caches cannot say
        (:meth:`~sushy_kubevirt.kube.cluster.Cluster.generation`): no API
        call. Every VM is reached.
        """
        kept = self._kept.get(ident)
        generation = kept and self._cluster().generation(kept[2])
        if generation is None:
            return None
        if generation == kept[0]:
            return kept[1]
        with context.bound(context.Request()):
            return self.etag(ident)

    def etag(self, ident):
        """The ETag of System ``ident``, as ``compute`` would give it."""
        kept = self._kept.get(ident)
        before = None
        if kept is not None:
            before = self._cluster().generation(kept[2])
            if self._holds(kept, before):
                return kept[1]
        vm, current = self._compute(ident)
        meta = vm['metadata']
        if ident != identity.firmware_uuid(vm):
            return current   # another id: as the account's reach finds it
        if len(self._kept) >= LIMIT:
            self._kept.clear()
        # Kept with the generation read before computing, when it is the
        # VM's namespace's (the namespace is known from the last time).
        self._kept[ident] = (
            before if kept is not None and kept[2] == meta['namespace']
            else None, current, meta['namespace'], meta.get('labels') or {})
        return current
