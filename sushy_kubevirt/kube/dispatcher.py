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

"""One thread that calls the event handlers of every informer of a Cluster.

Events are delivered in the order they were queued, so the events of one
object (one key) arrive in watch order, whatever informer they come from.
Handlers run one at a time on this thread and must be fast: a slow one
delays every other event.
"""

import logging
import queue
import threading

LOG = logging.getLogger(__name__)


class Dispatcher:

    def __init__(self, name='dispatcher'):
        self.name = name
        self._queue = queue.SimpleQueue()
        self._stopped = threading.Event()
        self._thread = None

    def put(self, handlers, kind, obj):
        """Queue ``fn(kind, obj)`` for each ``fn`` in ``handlers``."""
        if handlers:
            self._queue.put((handlers, kind, obj))

    def start(self):
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=self.name)
        self._thread.start()

    def stop(self, timeout=10.0):
        """End the thread; events still queued are dropped."""
        self._stopped.set()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None or self._stopped.is_set():
                return
            handlers, kind, obj = item
            for fn in handlers:
                try:
                    fn(kind, obj)
                except Exception:
                    LOG.exception('%s: handler %r failed on %s', self.name,
                                  fn, kind)
