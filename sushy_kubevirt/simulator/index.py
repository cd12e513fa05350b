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

"""Ordered, copy-on-write object indexes and list snapshots.

kube-apiserver serves a continued list page as a range read at the list's
resourceVersion (etcd's MVCC, or the watch cache's B-tree snapshots): a
page costs O(page), whatever the collection's size. The simulator keeps:

* per type an :class:`Index`: the objects by ``(namespace, name)`` and,
  built lazily, their keys in order (a create or delete drops the order;
  the next list sorts again, at C speed);
* :class:`Snapshot`: a type's state at one resourceVersion. The current
  state's snapshot shares the index's dict and key list (no copy); the
  next write to the type copies them first (copy-on-write), so a
  snapshot never changes. An older state is rebuilt from history once;
* :class:`Snapshots`: the snapshots continue tokens refer to, by (type,
  resourceVersion), bounded (least recently used go first); one evicted
  is rebuilt from history, as long as its resourceVersion is not
  compacted.

A page is then two binary searches (the namespace's range, the token's
start key) and a slice: O(log N + page). Hand-written rather than a
sorted-container dependency: stdlib ``bisect`` on a plain list of tuples
is fast, and snapshots need the exact copy-on-write points above.
"""

import bisect
import collections


class Snapshot:
    """A type's objects at ``rv``: ``keys`` in order, ``objs`` by key.

    Read-only: neither the list nor the dict changes after it is made.
    """

    __slots__ = ('rv', 'keys', 'objs')

    def __init__(self, rv, keys, objs):
        self.rv = rv
        self.keys = keys
        self.objs = objs

    def bounds(self, namespace=None, after=None):
        """``(lo, hi)``: positions of ``namespace``'s keys after ``after``.

        All namespaces if ``namespace`` is None; from the start if
        ``after`` (a key) is None.
        """
        keys = self.keys
        lo, hi = 0, len(keys)
        if namespace is not None:
            lo = bisect.bisect_left(keys, (namespace,))
            hi = bisect.bisect_left(keys, (namespace + '\x00',), lo)
        if after is not None:
            lo = max(lo, bisect.bisect_right(keys, after, lo, hi))
        return lo, hi

    def items(self, namespace=None):
        lo, hi = self.bounds(namespace)
        objs = self.objs
        return [objs[k] for k in self.keys[lo:hi]]


class Index:
    """One type's stored objects; copy-on-write once snapshotted."""

    __slots__ = ('objs', '_keys', '_shared')

    def __init__(self):
        self.objs = {}
        self._keys = None     # sorted keys, None until a list needs them
        self._shared = False  # objs/_keys belong to a snapshot too

    def put(self, key, obj):
        self._own()
        if key not in self.objs:
            self._keys = None
        self.objs[key] = obj

    def pop(self, key):
        self._own()
        self._keys = None
        del self.objs[key]

    def sorted_keys(self):
        """The keys in order (a list never changed in place)."""
        if self._keys is None:
            self._keys = sorted(self.objs)
        return self._keys

    def snapshot(self, rv):
        """The current state as a :class:`Snapshot` at ``rv`` (no copy)."""
        self._shared = True
        return Snapshot(rv, self.sorted_keys(), self.objs)

    def _own(self):
        if self._shared:
            self.objs = dict(self.objs)
            self._shared = False


class Snapshots:
    """Snapshots kept for continue tokens, least recently used evicted."""

    def __init__(self, size=8):
        self.size = size
        self._held = collections.OrderedDict()

    def get(self, type_key, rv):
        snap = self._held.get((type_key, rv))
        if snap is not None:
            self._held.move_to_end((type_key, rv))
        return snap

    def keep(self, type_key, snap, compacted_rv):
        """Hold ``snap``; drop compacted ones and the least recently used."""
        self._held[(type_key, snap.rv)] = snap
        self._held.move_to_end((type_key, snap.rv))
        for key in [k for k in self._held if k[1] < compacted_rv]:
            del self._held[key]
        while len(self._held) > self.size:
            self._held.popitem(last=False)
