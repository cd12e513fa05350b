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

"""A scaled clock and a keyed timer scheduler for the simulated controllers.

Simulated time runs ``time_scale`` times faster than real time: a delay of
``d`` simulated seconds elapses in ``d / time_scale`` real seconds.  The
scheduler runs every callback on one thread, in due order; a callback
scheduled under a key that is already pending keeps the earlier due time, so
a burst of events for one object costs one reconcile.
"""

import heapq
import itertools
import logging
import threading
import time

LOG = logging.getLogger(__name__)


def wait_for(predicate, timeout=10.0, interval=0.02):
    """Poll ``predicate()`` until true; return its value.

    :raises TimeoutError: not true within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError('condition not met in %.1fs' % timeout)
        time.sleep(interval)


def stage_delays(defaults, overrides):
    """``defaults`` updated from ``overrides`` matched case-insensitively.

    Names not in ``defaults`` belong to another component and are ignored.
    """
    delays = dict(defaults)
    names = {name.lower(): name for name in defaults}
    for name, value in (overrides or {}).items():
        if name.lower() in names:
            delays[names[name.lower()]] = (None if value is None
                                           else float(value))
    return delays


def for_controller(sim, defaults, name):
    """``(delays, scheduler)`` for a controller of ``sim``.

    ``delays`` are ``defaults`` updated from ``sim.stage_delays``; the
    scheduler runs on a clock scaled by ``sim.time_scale``.
    """
    return (stage_delays(defaults, sim.stage_delays),
            Scheduler(Clock(sim.time_scale), name))


class Clock:
    """Monotonic simulated time."""

    def __init__(self, time_scale=1.0):
        if time_scale <= 0:
            raise ValueError('time_scale must be > 0')
        self.time_scale = float(time_scale)
        self._origin = time.monotonic()

    def now(self):
        """Simulated seconds since the clock was created."""
        return (time.monotonic() - self._origin) * self.time_scale

    def real_seconds(self, sim_seconds):
        """Real seconds that ``sim_seconds`` of simulated time take."""
        return max(0.0, sim_seconds) / self.time_scale


class Scheduler:
    """Run ``fn()`` callbacks on one thread after simulated delays."""

    def __init__(self, clock, name='sim-scheduler'):
        self.clock = clock
        self._name = name
        self._heap = []
        self._due = {}
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name=self._name,
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self):
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._due.clear()
            self._cond.notify_all()
        if self._thread and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def call_later(self, delay, fn, key=None):
        """Run ``fn`` after ``delay`` simulated seconds.

        With a ``key``, at most one call per key is pending: the earliest.
        """
        due = time.monotonic() + self.clock.real_seconds(delay)
        with self._cond:
            if self._stopped:
                return
            if key is not None:
                current = self._due.get(key)
                if current is not None and current[0] <= due:
                    return
                entry = (due, next(self._seq), key, fn)
                self._due[key] = entry
            else:
                entry = (due, next(self._seq), None, fn)
            heapq.heappush(self._heap, entry)
            self._cond.notify()

    def _next(self):
        with self._cond:
            while not self._stopped:
                if not self._heap:
                    self._cond.wait()
                    continue
                entry = self._heap[0]
                wait = entry[0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                key = entry[2]
                if key is not None:
                    if self._due.get(key) is not entry:
                        continue
                    del self._due[key]
                return entry[3]
            return None

    def _run(self):
        while True:
            fn = self._next()
            if fn is None:
                return
            try:
                fn()
            except Exception:
                LOG.exception('simulator callback failed')
