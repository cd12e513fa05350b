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

"""Token bucket limiting the rate of live Kubernetes API calls."""

import threading
import time


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved up.

    A caller reserves a token under the lock (the balance may go negative,
    which queues callers in arrival order) and sleeps outside it.
    """

    def __init__(self, qps, burst, clock=time.monotonic, sleep=time.sleep):
        if qps <= 0 or burst < 1:
            raise ValueError('qps must be > 0 and burst >= 1')
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    def _refill(self):
        now = self._clock()
        self._tokens = min(float(self.burst),
                           self._tokens + (now - self._last) * self.qps)
        self._last = now

    def reserve(self):
        """Take one token; return how long the caller must wait first."""
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.qps

    def take(self):
        """Take one token if one is saved; whether one was (never waits)."""
        with self._lock:
            self._refill()
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def acquire(self):
        """Block until a token is available; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay
