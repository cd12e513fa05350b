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

"""The indexes of cached objects (client-go's ``Indices``).

Maps each value of each index function to the keys of the objects that
yield it. A :class:`~sushy_kubevirt.kube.indexer.Store` keeps its own, or
shares one with the stores of other namespaces (their keys differ), so
that one probe finds the matches of every namespace. The stores change it
under their own lock; its lock only keeps each change whole.
:attr:`Indices.generation` counts the changes: a reader that saw the same
count before and after reading saw no change of the stores.
"""

import threading


class Indices:
    """``indexers`` maps an index name to ``fn(obj) -> iterable of str``."""

    def __init__(self, indexers=None):
        #: ``{index: fn(obj) -> values}``.
        self.indexers = dict(indexers or {})
        #: ``{index: {value: {key}}}``.
        self._keys = {name: {} for name in self.indexers}
        #: Guards ``_keys`` (shared by several stores' threads).
        self._lock = threading.Lock()
        #: Objects added and removed so far.
        self.generation = 0

    def values(self, index, obj):
        """The values ``obj`` has in ``index`` (a set)."""
        return set(self.indexers[index](obj) or ())

    def keys(self, index, value):
        """The keys of the objects whose ``index`` yields ``value``."""
        with self._lock:
            return list(self._keys[index].get(value, ()))

    def add(self, key, obj):
        """Index ``obj``, stored under ``key``."""
        values = self._all_values(obj)
        with self._lock:
            self.generation += 1
            for name, found in values:
                index = self._keys[name]
                for value in found:
                    index.setdefault(value, set()).add(key)

    def remove(self, key, obj):
        """Forget ``obj``, the object stored under ``key`` until now."""
        values = self._all_values(obj)
        with self._lock:
            self.generation += 1
            for name, found in values:
                index = self._keys[name]
                for value in found:
                    keys = index.get(value)
                    if keys is not None:
                        keys.discard(key)
                        if not keys:
                            del index[value]

    def _all_values(self, obj):
        return [(name, self.values(name, obj)) for name in self.indexers]
