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

"""Failed authentications per client: a token bucket each, in memory.

Each client address may fail ``burst`` times at once, then ``rate``
times per second; past that, its requests that need credentials are
refused (429 with ``Retry-After``) before any check. Kept per process
(each gunicorn worker counts its own), for at most :data:`CLIENTS`
addresses: the least recently seen are forgotten first, and a bucket
that refilled is dropped.
"""

import collections
import dataclasses
import itertools
import math
import threading
import time

from sushy_kubevirt import config

#: Client addresses remembered per process.
CLIENTS = 10000


@dataclasses.dataclass(frozen=True)
class Policy:
    #: Failed authentications per second per client, sustained.
    rate: float = 1.0
    #: Failed authentications a client may make at once.
    burst: int = 10


def policy(app_config):
    """:raises sushy_kubevirt.config.ConfigError: naming the key."""
    defaults = Policy()
    rate = app_config.get(config.AUTH_FAILURE_RATE_KEY, defaults.rate)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
            not rate > 0:
        raise config.ConfigError('%s must be a number > 0, not %r'
                                 % (config.AUTH_FAILURE_RATE_KEY, rate))
    burst = app_config.get(config.AUTH_FAILURE_BURST_KEY, defaults.burst)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
        raise config.ConfigError('%s must be a whole number >= 1, not %r'
                                 % (config.AUTH_FAILURE_BURST_KEY, burst))
    return Policy(float(rate), burst)


class Throttle:
    """The failure buckets of the clients of one process."""

    def __init__(self, settings, size=CLIENTS, clock=time.monotonic):
        self.policy = settings
        self._size = size
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets = collections.OrderedDict()   # client: (tokens, at)

    def _tokens(self, client, now):
        tokens, at = self._buckets.get(client, (self.policy.burst, now))
        return min(float(self.policy.burst),
                   tokens + (now - at) * self.policy.rate)

    def retry_after(self, client):
        """Whole seconds ``client`` must wait; 0 when it may try now."""
        with self._lock:
            tokens = self._tokens(client, self._clock())
        if tokens >= 1:
            return 0
        return max(1, math.ceil((1 - tokens) / self.policy.rate))

    def failed(self, client):
        """Count a failed authentication of ``client``."""
        with self._lock:
            now = self._clock()
            tokens = max(0.0, self._tokens(client, now) - 1)
            self._buckets.pop(client, None)
            self._buckets[client] = (tokens, now)
            while len(self._buckets) > self._size:
                self._buckets.popitem(last=False)
            self._drop_refilled(now)

    def _drop_refilled(self, now):
        """Forget the oldest buckets that are full again (bounded work)."""
        for client in list(itertools.islice(self._buckets, 2)):
            if self._tokens(client, now) >= self.policy.burst:
                del self._buckets[client]
