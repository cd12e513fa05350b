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

"""Index lookups across the informers of every namespace at once.

The informers of one resource, one per namespace (or one for all), keep
their objects in stores that share :attr:`FlatIndex.indices`: a lookup
probes it once and reads each match from its informer, so it costs the
same with one namespace or a hundred. Writes overlaid on an informer's
cache (read-your-writes) go through :meth:`FlatIndex.note_write`, so
that lookups see them without asking every informer.
"""

import threading

from sushy_kubevirt.kube import indices


class FlatIndex:
    """The shared index of informers of one resource, and its lookups.

    :param indexers: as for :class:`~sushy_kubevirt.kube.indices.Indices`.
    :param informer_of: ``fn(namespace) -> Informer`` of the informer
        that holds the objects of ``namespace``.
    """

    def __init__(self, indexers, informer_of):
        #: The indexes every informer's store shares.
        self.indices = indices.Indices(indexers)
        #: ``fn(namespace) -> Informer``.
        self._informer_of = informer_of
        #: Informers that may have a write overlaid on their cache.
        self._overlaid = set()
        #: Guards ``_overlaid``; held while an overlay is added, so that
        #: a lookup never drops an informer that is being written to.
        self._lock = threading.Lock()

    def note_write(self, informer, obj):
        """``informer.note_write(obj)``, seen by later lookups."""
        with self._lock:
            self._overlaid.add(informer)
            informer.note_write(obj)

    def generation(self):
        """:attr:`Indices.generation`, or None while a write is overlaid."""
        if not self._overlaid:
            return self.indices.generation
        with self._lock:
            self._overlaid = {i for i in self._overlaid if i.has_overlay()}
            return None if self._overlaid else self.indices.generation

    def find(self, index, value):
        """``{informer: [objects]}`` whose ``index`` yields ``value`` now.

        Only the informers with a match: one probe of the index, then a
        read of each match and of each overlaid write.
        """
        keys = {}
        for key in self.indices.keys(index, value):
            namespace = key.rpartition('/')[0] or None
            keys.setdefault(self._informer_of(namespace), []).append(key)
        with self._lock:
            self._overlaid = {i for i in self._overlaid if i.has_overlay()}
            for informer in self._overlaid:
                keys.setdefault(informer, [])
        found = {}
        for informer, some in keys.items():
            objs = informer.matching(some, index, value)
            if objs:
                found[informer] = objs
        return found
