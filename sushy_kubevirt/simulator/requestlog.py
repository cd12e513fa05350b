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

"""Request log and per-(verb, resource) counters, like an audit log."""

import collections
import threading


class RequestLog:
    """Thread-safe list of request entries (dicts) and counters.

    Entry keys: method, path, query (dict), verb, group, resource,
    namespace, name, status, started, duration, events, user, error (the
    Status message of an error answer) and warnings (Warning headers).
    """

    def __init__(self, max_entries=100_000):
        self._lock = threading.Lock()
        self._entries = collections.deque(maxlen=max_entries)
        self._counters = collections.Counter()

    def record(self, entry):
        with self._lock:
            self._entries.append(entry)
            self._counters[(entry.get('verb'), entry.get('resource'))] += 1

    @staticmethod
    def _match(entry, filters):
        for key, want in filters.items():
            have = entry.get(key)
            if callable(want):
                if not want(have):
                    return False
            elif key == 'query':
                if any(have.get(k) != v for k, v in want.items()):
                    return False
            elif have != want:
                return False
        return True

    def entries(self, **filters):
        """Entries matching ``filters``.

        A filter value is compared for equality, called if callable, or
        (for ``query``) treated as a subset of the parsed query.
        """
        with self._lock:
            items = list(self._entries)
        return [e for e in items if self._match(e, filters)]

    def count(self, **filters):
        return len(self.entries(**filters))

    def counters(self):
        """``{(verb, resource): count}`` since the last clear."""
        with self._lock:
            return dict(self._counters)

    def clear(self):
        with self._lock:
            self._entries.clear()
            self._counters.clear()
