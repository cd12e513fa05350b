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

"""A thread-safe object store with indexes (client-go's ThreadSafeStore).

Objects are kept by key (``namespace/name``) and stored as given: callers
must not mutate what they put in or read out. The indexes change with the
objects, under the store's lock.
"""

import threading

from sushy_kubevirt.kube import indices
from sushy_kubevirt.kube import resources


class Store:
    """``indexers`` maps an index name to ``fn(obj) -> iterable of str``.

    Or it is an :class:`~sushy_kubevirt.kube.indices.Indices` this store
    shares with the stores of other namespaces: :meth:`by_index` answers
    with this store's objects only.
    """

    def __init__(self, indexers=None):
        #: Guards ``_items`` and keeps each change of the indexes with it.
        self._lock = threading.RLock()
        #: ``{key: object}``.
        self._items = {}
        #: The indexes of ``_items`` (maybe of other stores' too).
        self.indices = indexers if isinstance(indexers, indices.Indices) \
            else indices.Indices(indexers)

    def __len__(self):
        return len(self._items)

    def get(self, key):
        return self._items.get(key)

    def list(self):
        with self._lock:
            return list(self._items.values())

    def keys(self):
        with self._lock:
            return list(self._items)

    def index_values(self, index, obj):
        """The values ``obj`` has in ``index`` (a set)."""
        return self.indices.values(index, obj)

    def by_index(self, index, value):
        """Objects whose ``index`` function yields ``value``."""
        with self._lock:
            found = (self._items.get(k)
                     for k in self.indices.keys(index, value))
            return [o for o in found if o is not None]

    def upsert(self, obj):
        """Add or replace ``obj``; return the object it replaced, or None."""
        key = resources.object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self.indices.remove(key, old)
            self._items[key] = obj
            self.indices.add(key, obj)
            return old

    def delete(self, key):
        """Remove ``key``; return the object removed, or None."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.indices.remove(key, old)
            return old

    def replace(self, objs):
        """Make the store hold exactly ``objs``.

        :returns: ``(added, updated, deleted)``: new objects, ``(old, new)``
            pairs and the last known state of objects no longer present.
        """
        with self._lock:
            fresh = {resources.object_key(o): o for o in objs}
            deleted = [self.delete(k) for k in list(self._items)
                       if k not in fresh]
            added, updated = [], []
            for obj in fresh.values():
                old = self.upsert(obj)
                if old is None:
                    added.append(obj)
                else:
                    updated.append((old, obj))
            return added, updated, deleted
