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

"""Event delivery: a queue per subscriber, a bounded pool of workers.

Each subscription has a :class:`Sender`, a bounded queue of events; one
:class:`Pool` of at most ``workers`` threads serves every sender of the
process. A sender with events waits its turn in the pool; a worker makes
one attempt at its oldest event and puts it back in line, so a sender is
never on two workers at once (its events go in queue order) and every
sender gets its turn. A failed attempt is retried ``retry_attempts`` times
every ``retry_interval`` seconds (the sender waits in the pool, holding no
worker), then given up (counted). A full queue drops the new event
(counted) and never blocks the caller. A subscriber that does not answer
holds one worker for at most ``timeout`` seconds per connect or read: up
to ``workers - 1`` of them delay no other subscriber.

:class:`Destination` resolves the host and applies the host policy before
the first POST and after every failure, then connects only to the
addresses that check approved (no second lookup, so no DNS rebinding);
``Host``, TLS SNI and the certificate check name the Destination's host.
Certificates are checked against ``REQUESTS_CA_BUNDLE`` or
``CURL_CA_BUNDLE`` if set, else certifi's bundle (as ``requests`` does).
No proxy is used. An idle sender keeps no connection open.
"""

import collections
import functools
import heapq
import itertools
import json
import logging
import os
import ssl
import threading
import time
from urllib import parse as urlparse

import requests
import urllib3

from sushy_kubevirt.events import subscriptions
from sushy_kubevirt import imagecheck
from sushy_kubevirt.kubevirt import imageurl

LOG = logging.getLogger(__name__)
EVENT_TYPE = '#Event.v1_7_0.Event'
USER_AGENT = 'sushy-kubevirt-events'
#: Outcomes counted per subscription (``/metrics``).
OUTCOMES = ('delivered', 'retried', 'failed', 'dropped')
#: Bytes of a subscriber's answer read (the rest is not).
ANSWER_LIMIT = 65536


def payload(sub, event_id, records):
    return {'@odata.type': EVENT_TYPE, 'Id': event_id, 'Name': 'Event',
            'Context': sub.context, 'Events': records}


@functools.lru_cache(maxsize=4)
def _tls(cafile):
    return ssl.create_default_context(cafile=cafile)


def tls_context():
    """The client TLS context: CA bundle as ``requests`` chooses it."""
    return _tls(os.environ.get('REQUESTS_CA_BUNDLE')
                or os.environ.get('CURL_CA_BUNDLE')
                or requests.certs.where())


def _authority(url):
    host = '[%s]' % url.host if ':' in url.host else url.host
    if url.port == imageurl.DEFAULT_PORTS[url.scheme]:
        return host
    return '%s:%d' % (host, url.port)


class Destination:
    """POSTs Events to one subscription's pinned, checked addresses."""

    def __init__(self, sub, settings, policy):
        self.sub = sub
        self.settings = settings
        self.policy = policy
        self.counts = collections.Counter()
        #: The addresses the last check approved; None: check first.
        self._addresses = None
        self._pools = {}
        self._headers = {}
        try:
            self.url = imageurl.parse(sub.destination, 'Destination')
        except imageurl.Invalid as exc:  # a Secret edited by hand
            self.url, self._invalid = None, str(exc)
            return
        parts = urlparse.urlsplit(self.url.url)
        self._target = (parts.path or '/') + (
            '?' + parts.query if parts.query else '')
        for name, value in sub.headers:
            reason = subscriptions.header_refusal(name, value)
            if reason:  # a Secret written by hand, or by an old release
                LOG.warning('Subscription %s: %s; not sent', sub.id, reason)
            else:
                self._headers[name] = value
        if 'user-agent' not in {name.lower() for name in self._headers}:
            self._headers['User-Agent'] = USER_AGENT
        self._headers.update({'Host': _authority(self.url),
                              'Content-Type': 'application/json'})

    def close(self):
        """Close the connections (the checked addresses are kept)."""
        pools, self._pools = self._pools, {}
        for pool in pools.values():
            pool.close()

    def post(self, event_id, records):
        """One POST of one Event; None when answered 2xx, else why not."""
        if self.url is None:
            return self._invalid
        if self._addresses is None:
            try:
                self._addresses = subscriptions.checked_addresses(
                    self.url, self.policy, self.settings.timeout)
            except imagecheck.Refused as exc:
                return str(exc)
        body = json.dumps(payload(self.sub, event_id, records)).encode()
        reason = self._send(body)
        if reason is not None:
            self.close()
            self._addresses = None  # checked again before the next attempt
        return reason

    def _pool(self, address):
        pool = self._pools.get(address)
        if pool is None:
            kwargs = {'port': self.url.port, 'maxsize': 1, 'block': False,
                      'retries': False, 'timeout': urllib3.Timeout(
                          connect=self.settings.timeout,
                          read=self.settings.timeout)}
            if self.url.scheme == 'https':
                pool = urllib3.HTTPSConnectionPool(
                    address, server_hostname=self.url.host,
                    ssl_context=tls_context(), **kwargs)
            else:
                pool = urllib3.HTTPConnectionPool(address, **kwargs)
            self._pools[address] = pool
        return pool

    def _send(self, body):
        reason = 'no address'
        for address in self._addresses:
            try:
                answer = self._pool(address).urlopen(
                    'POST', self._target, body=body, headers=self._headers,
                    retries=False, redirect=False, preload_content=False)
            except urllib3.exceptions.NewConnectionError:
                reason = 'NewConnectionError'
                continue  # refused or unreachable: the next address
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                return type(exc).__name__
            try:
                answer.read(ANSWER_LIMIT)
            except (urllib3.exceptions.HTTPError, OSError):
                pass  # the status is what counts
            finally:
                answer.release_conn()
            if 200 <= answer.status < 300:
                return None
            return 'HTTP %d' % answer.status
        return reason


class Pool:
    """At most ``size`` threads, started as needed, serving the senders."""

    def __init__(self, size):
        self.size = size
        self._ready = []  # heap of (monotonic time, seq, sender)
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._threads = 0
        self._idle = 0
        self._stopped = False

    def schedule(self, sender, at=None):
        """Run ``sender.run_once()`` on a worker at ``at`` (or now)."""
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._ready, (
                time.monotonic() if at is None else at, next(self._seq),
                sender))
            if self._idle or self._threads >= self.size:
                self._cond.notify()
                return
            self._threads += 1
            threading.Thread(target=self._work, daemon=True,
                             name='events worker %d' % self._threads).start()

    def stop(self):
        """Workers end after their current attempt; nothing else runs."""
        with self._cond:
            self._stopped = True
            self._ready = []
            self._cond.notify_all()

    def _next(self):
        with self._cond:
            self._idle += 1
            try:
                while not self._stopped:
                    now = time.monotonic()
                    if self._ready and self._ready[0][0] <= now:
                        return heapq.heappop(self._ready)[2]
                    self._cond.wait(min(self._ready[0][0] - now, 1.0)
                                    if self._ready else 1.0)
                return None
            finally:
                self._idle -= 1

    def _work(self):
        while True:
            sender = self._next()
            if sender is None:
                return
            try:
                sender.run_once()
            except Exception:
                LOG.exception('Event delivery to subscription %s failed',
                              sender.sub.id)


class Sender:
    """Deliver events to one subscription while ``leading()`` holds.

    :param floor: events with a key at most this were delivered already.
    :param pool: the :class:`Pool` that runs it.
    """

    def __init__(self, sub, settings, policy, leading, floor, pool):
        self.sub = sub
        self.settings = settings
        self.floor = floor
        #: Key of the last event delivered or given up (the checkpoint).
        self.done = floor
        self.destination = Destination(sub, settings, policy)
        self.counts = self.destination.counts
        self._leading = leading
        self._pool = pool
        self._lock = threading.Lock()
        self._queue = collections.deque()
        self._current = None  # the event being attempted
        self._attempts = 0
        self._scheduled = False  # waiting in the pool, or running
        self._stopped = False

    def offer(self, key, record):
        """Queue one event unless already delivered; never blocks."""
        if key <= self.floor:
            return
        with self._lock:
            if self._stopped:
                return
            if len(self._queue) >= self.settings.queue_size:
                self.counts['dropped'] += 1
                return
            self._queue.append((key, record))
            if self._scheduled:
                return
            self._scheduled = True
        self._pool.schedule(self)

    def queued(self):
        return len(self._queue)

    def stop(self):
        """Send nothing more (an attempt under way ends by itself)."""
        with self._lock:
            self._stopped = True
            idle = not self._scheduled
        if idle:
            self.destination.close()

    def run_once(self):
        """One attempt at the oldest event (on a worker of the pool)."""
        at = self._attempt()
        with self._lock:
            self._scheduled = at is not None and not self._stopped and (
                self._current is not None or bool(self._queue))
            again = self._scheduled
        if again:
            self._pool.schedule(self, at)
        else:
            self.destination.close()  # idle: no connection kept

    def _attempt(self):
        """When to run again (None: stopped, or no longer leading)."""
        if self._stopped or not self._leading():
            return None  # what is left is the next leader's
        if self._current is None:
            with self._lock:
                if not self._queue:
                    return time.monotonic()
                self._current = self._queue.popleft()
                self._attempts = 0
        key, record = self._current
        if self._attempts:
            self.counts['retried'] += 1
        reason = self.destination.post(record['EventId'], [record])
        if reason is not None:
            LOG.info('Event %s to subscription %s failed (attempt %d): %s',
                     record['EventId'], self.sub.id, self._attempts + 1,
                     reason)
            if self._attempts < self.settings.retry_attempts:
                self._attempts += 1
                return time.monotonic() + self.settings.retry_interval
            self.counts['failed'] += 1
        else:
            self.counts['delivered'] += 1
        self._current = None
        self.done = max(self.done, key)
        return time.monotonic()
