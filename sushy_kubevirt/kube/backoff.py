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

"""Exponential backoff with jitter, reset by a success or a healthy spell."""

import random
import time


class Backoff:
    """client-go's reflector backoff: 0.8 s doubling, capped.

    Each delay is ``d + U(0, 1) * d`` (so in ``[d, 2d)``); one above
    ``cap`` is drawn in ``(cap / 2, cap]`` instead, so that clients cut
    off together do not retry in step. :meth:`reset` (the caller saw a
    success) and a spell of ``reset_after`` seconds without a delay asked
    for start ``d`` again from ``initial``, so failures separated by a
    success never stack.
    """

    def __init__(self, initial=0.8, factor=2.0, cap=30.0, reset_after=120.0,
                 clock=time.monotonic, rand=random.random):
        self.initial = initial
        self.factor = factor
        self.cap = cap
        self.reset_after = reset_after
        self._clock = clock
        self._rand = rand
        self._duration = initial
        self._last = None

    def reset(self):
        """The next delay is ``initial`` again (the server answered)."""
        self._last = None

    def next(self):
        """The next delay, in seconds."""
        now = self._clock()
        if self._last is None or now - self._last >= self.reset_after:
            self._duration = self.initial
        self._last = now
        duration = self._duration
        self._duration = min(self._duration * self.factor, self.cap)
        jitter = self._rand()
        delay = duration + jitter * duration
        return delay if delay <= self.cap else self.cap * (1 - jitter / 2)
