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

"""Fault injection rules, matched on method, path and query.

Each rule fires ``times`` times (None: until removed). Request-level
actions (forced status, latency) apply before the request is handled;
``lose_answer`` after it succeeded (the write is applied, its answer is
lost); stream actions (in-stream ERROR, drop, stall, early close) shape
a watch.
APF-style throttling answers 429 above ``max_qps`` or ``max_inflight``.
"""

import dataclasses
import itertools
import re
import threading
import time

from sushy_kubevirt.simulator import apistatus

STREAM_ACTIONS = ('watch_error', 'drop', 'stall', 'close')
#: Every action and its parameters (the first ones are required).
ACTIONS = {'status': (('code',), ('message', 'retry_after')),
           'latency': (('seconds',), ()),
           'event_delay': (('seconds',), ()),
           'lose_answer': ((), ('code', 'message')),
           'watch_error': ((), ('code', 'after', 'message')),
           'drop': ((), ('after', 'partial')),
           'stall': ((), ('seconds',)),
           'close': ((), ('after',))}


@dataclasses.dataclass
class Rule:
    action: str
    method: str = None
    path: str = None
    query: dict = None
    times: int = 1
    params: dict = dataclasses.field(default_factory=dict)
    hits: int = 0
    id: str = ''

    def matches(self, method, path, query):
        if self.method and self.method.upper() != method:
            return False
        if self.path and not re.search(self.path, path):
            return False
        for key, want in (self.query or {}).items():
            if key not in query or (want is not None and
                                    str(want) != query[key]):
                return False
        return True


class Faults:
    """The fault table of one simulator (thread-safe)."""

    def __init__(self, latency_ms=0, max_qps=None, max_inflight=None):
        self._lock = threading.Lock()
        self._rules = []
        self._ids = itertools.count(1)
        self.latency_ms = latency_ms
        self.max_qps = max_qps
        self.max_inflight = max_inflight
        self._inflight = 0
        self._tokens = None
        self._refilled = time.monotonic()

    # -- scripting --------------------------------------------------------

    def add(self, action, *, method=None, path=None, query=None, times=1,
            **params):
        rule = Rule(action, method, path, query, times, params)
        with self._lock:
            rule.id = 'f%d' % next(self._ids)
            self._rules.append(rule)
        return rule

    def rules(self):
        """A snapshot of the rules still armed."""
        with self._lock:
            return list(self._rules)

    def remove_id(self, rule_id):
        """Remove the rule with this id; False if there is none."""
        with self._lock:
            for rule in self._rules:
                if rule.id == rule_id:
                    self._rules.remove(rule)
                    return True
        return False

    def status(self, code, *, message=None, retry_after=None, **match):
        """Answer ``code`` (a kube Status; 429 as APF plain text)."""
        return self.add('status', code=code, message=message,
                        retry_after=retry_after, **match)

    def latency(self, seconds, **match):
        """Delay matching requests by ``seconds`` before answering."""
        match.setdefault('times', None)
        return self.add('latency', seconds=seconds, **match)

    def lose_answer(self, code=None, *, message=None, **match):
        """Apply a matching request, then lose its answer.

        The connection is cut instead of answering (the client sees it
        reset); with ``code``, that status is answered instead (a 504 of
        a request that timed out but was applied). Fires only on a
        request that succeeded.
        """
        return self.add('lose_answer', code=code, message=message, **match)

    def event_delay(self, seconds, **match):
        """Delay every event of matching watches by ``seconds``."""
        return self.add('event_delay', seconds=seconds, **match)

    def watch_error(self, code=410, *, after=0, message=None, **match):
        """Send an ERROR event with ``code`` after ``after`` events."""
        return self.add('watch_error', code=code, after=after,
                        message=message, **match)

    def drop(self, *, after=0, partial=True, **match):
        """Cut the connection (SHUT_RDWR) after ``after`` events.

        With ``partial`` the cut happens inside a chunk.
        """
        return self.add('drop', after=after, partial=partial, **match)

    def stall(self, *, seconds=None, **match):
        """Send headers, then nothing for ``seconds`` (None: forever)."""
        return self.add('stall', seconds=seconds, **match)

    def close(self, *, after=0, **match):
        """End matching watches cleanly after ``after`` events."""
        return self.add('close', after=after, **match)

    def remove(self, rule):
        with self._lock:
            if rule in self._rules:
                self._rules.remove(rule)

    def clear(self):
        with self._lock:
            self._rules = []

    # -- evaluation -------------------------------------------------------

    def take(self, method, path, query, actions):
        """Consume and return the first matching rule per action."""
        found = {}
        with self._lock:
            for rule in list(self._rules):
                if rule.action in actions and rule.action not in found \
                        and rule.matches(method, path, query):
                    rule.hits += 1
                    found[rule.action] = rule
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times <= 0:
                            self._rules.remove(rule)
        return found

    def before(self, method, path, query):
        """Latency then forced status for a request (raises ApiError)."""
        found = self.take(method, path, query, ('latency', 'status'))
        delay = self.latency_ms / 1000.0
        if 'latency' in found:
            delay += found['latency'].params['seconds']
        if delay > 0:
            time.sleep(delay)
        rule = found.get('status')
        if rule:
            params = rule.params
            if params['code'] == 429:
                raise apistatus.too_many_requests(params['retry_after'] or 1)
            error = apistatus.from_code(params['code'], params['message'])
            if params['retry_after'] is not None:
                error.headers['Retry-After'] = str(params['retry_after'])
            raise error

    def lost_answer(self, method, path, query):
        """The ``lose_answer`` parameters for a request that succeeded.

        None when no rule matches (a matching rule is consumed).
        """
        rule = self.take(method, path, query, ('lose_answer',)).get(
            'lose_answer')
        return None if rule is None else rule.params

    def stream_plan(self, method, path, query):
        """Stream actions for a watch: ``{action: params}``."""
        found = self.take(method, path, query,
                          STREAM_ACTIONS + ('event_delay',))
        return {action: rule.params for action, rule in found.items()}

    def admit(self, long_running):
        """APF: 429 above the rate or concurrency; returns a release fn."""
        with self._lock:
            if self.max_qps:
                now = time.monotonic()
                burst = max(1.0, float(self.max_qps))
                if self._tokens is None:
                    self._tokens = burst
                self._tokens = min(burst, self._tokens +
                                   (now - self._refilled) * self.max_qps)
                self._refilled = now
                if self._tokens < 1.0:
                    raise apistatus.too_many_requests(1)
                self._tokens -= 1.0
            if long_running:
                return lambda: None
            if self.max_inflight and self._inflight >= self.max_inflight:
                raise apistatus.too_many_requests(1)
            self._inflight += 1
        released = []

        def release():
            if not released:
                released.append(True)
                with self._lock:
                    self._inflight -= 1
        return release
