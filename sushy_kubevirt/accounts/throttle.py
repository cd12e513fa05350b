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

"""Password checks per client and account: a token bucket each, in memory.

A check of credentials that are not known good (bcrypt, or a
TokenReview) takes a token from the bucket of its key, ``(client,
account)`` (the account None for a user name that is no account, and for
bearer tokens); a successful check gives it back. A key may so fail
``burst`` times at once, then ``rate`` times per second; past that, a
check of it is refused (429 with ``Retry-After``) without being made.
What is throttled is the work failures cost, never a client's traffic:
known-good credentials and session tokens take nothing. Kept per process
(each gunicorn worker counts its own), for at most :data:`CLIENTS` keys:
the least recently seen are forgotten first, and a bucket that refilled
is dropped.
"""

import collections
import dataclasses
import itertools
import math
import threading
import time

from sushy_kubevirt import config

#: Keys remembered per process.
CLIENTS = 10000


@dataclasses.dataclass(frozen=True)
class Policy:
    #: Failed checks per second per key, sustained.
    rate: float = 1.0
    #: Failed checks a key may make at once.
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
    """The check buckets of the keys of one process."""

    def __init__(self, settings, size=CLIENTS, clock=time.monotonic):
        self.policy = settings
        self._size = size
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets = collections.OrderedDict()   # key: (tokens, at)

    def _tokens(self, key, now):
        tokens, at = self._buckets.get(key, (self.policy.burst, now))
        return min(float(self.policy.burst),
                   tokens + (now - at) * self.policy.rate)

    def _set(self, key, tokens, now):
        self._buckets.pop(key, None)
        self._buckets[key] = (tokens, now)
        while len(self._buckets) > self._size:
            self._buckets.popitem(last=False)
        self._drop_refilled(now)

    def take(self, key):
        """Take a check from ``key``'s bucket: 0, else the seconds to wait.

        Nothing is taken when there is nothing left.
        """
        with self._lock:
            now = self._clock()
            tokens = self._tokens(key, now)
            if tokens >= 1:
                self._set(key, tokens - 1, now)
                return 0
        return max(1, math.ceil((1 - tokens) / self.policy.rate))

    def give_back(self, key):
        """Return what a successful check of ``key`` took."""
        with self._lock:
            now = self._clock()
            self._set(key, min(float(self.policy.burst),
                               self._tokens(key, now) + 1), now)

    def _drop_refilled(self, now):
        """Forget the oldest buckets that are full again (bounded work)."""
        for key in list(itertools.islice(self._buckets, 2)):
            if self._tokens(key, now) >= self.policy.burst:
                del self._buckets[key]
