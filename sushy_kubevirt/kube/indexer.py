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
must not mutate what they put in or read out.
"""

import threading

from sushy_kubevirt.kube import resources


class Store:
    """``indexers`` maps an index name to ``fn(obj) -> iterable of str``."""

    def __init__(self, indexers=None):
        self._lock = threading.RLock()
        self._items = {}
        self._indexers = dict(indexers or {})
        self._indices = {name: {} for name in self._indexers}

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
        return set(self._indexers[index](obj) or ())

    def by_index(self, index, value):
        """Objects whose ``index`` function yields ``value``."""
        with self._lock:
            keys = self._indices[index].get(value, ())
            return [self._items[k] for k in keys]

    def upsert(self, obj):
        """Add or replace ``obj``; return the object it replaced, or None."""
        key = resources.object_key(obj)
        with self._lock:
            old = self._items.get(key)
            self._unindex(key, old)
            self._items[key] = obj
            self._index(key, obj)
            return old

    def delete(self, key):
        """Remove ``key``; return the object removed, or None."""
        with self._lock:
            old = self._items.pop(key, None)
            self._unindex(key, old)
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

    def _index(self, key, obj):
        for name, index in self._indices.items():
            for value in self.index_values(name, obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key, obj):
        if obj is None:
            return
        for name, index in self._indices.items():
            for value in self.index_values(name, obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
