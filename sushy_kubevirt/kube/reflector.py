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

"""List, then watch, one resource in one namespace (client-go's Reflector).

The reflector feeds ``on_replace(items, rv)`` after each list and
``on_event(type, obj)`` for each watch event, from its own thread.

* The watch starts at the list's resourceVersion, asks for bookmarks and
  for a server-side ``timeoutSeconds`` drawn from ``watch_timeout``; it
  resumes from the last event's or bookmark's resourceVersion.
* A clean close, a server timeout or a stall (nothing read for
  ``read_timeout``) re-watches at once; a dropped connection, connection
  refused, a 500 or a 429 (honouring Retry-After) re-watches after a
  backoff. None of these relists.
* A list pages ``page_size`` items when it reads the latest state
  (resourceVersion unset); ``page(items)`` sees each page as it arrives,
  so that only what the cache keeps is held until the list ends. If a
  continue token expires (410: the list outlived the server's history),
  the list is read again whole, without a limit, at the same
  resourceVersion (client-go's pager with ``FullListIfExpired``): at most
  one such fallback a list, so a list always ends. :meth:`Reflector.
  listing` tells whether a list is under way and progressing (a reader
  may wait for it rather than list the same objects again).
* A 410 relists at once at the last resourceVersion, then, if that is
  gone too, with a consistent read (resourceVersion unset). A second 410
  within ``backoff_reset`` seconds waits for the backoff first, so a
  server that answers 410 to every watch is not hammered.
* A 504 "Too large resource version" (the server is behind the
  resourceVersion we resume from) relists with a consistent read.
* A 500 re-watches after a backoff; other errors (403, 404, 503, 504...)
  back off and relist at the last resourceVersion.
* A watch that ends within ``short_watch`` seconds with no event is an
  error (backoff), so a server that closes at once is not hammered.

Bounded staleness: a list that succeeds and a watch the server accepts
reset the backoff, so failures separated by a success never stack, and
the backoff is capped at ``backoff_cap`` (3 s): after an outage the cache
is current again within that cap (plus one list) of the server's return.
The first failure of a spell is logged as a warning (an error for a 403),
repeats of the same failure at debug level, and the recovery once.
"""

import dataclasses
import logging
import random
import threading
import time
import typing

import urllib3

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import backoff
from sushy_kubevirt.kube import stream

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Timings:
    """Every delay of the reflector, in seconds (tests shrink them)."""
    backoff_initial: float = 0.8
    #: client-go caps at 30 s; 3 s bounds the staleness after an outage.
    backoff_cap: float = 3.0
    backoff_reset: float = 120.0
    #: Range of the watch's ``timeoutSeconds`` (drawn uniformly).
    watch_timeout: typing.Tuple[float, float] = (300.0, 600.0)
    #: Stall detector: longest silence tolerated on an open watch.
    read_timeout: float = 120.0
    #: A watch shorter than this with no event counts as an error.
    short_watch: float = 1.0
    #: Page size of consistent lists (resourceVersion unset).
    page_size: int = 500
    #: How long 403s right after an outage are the restarted server's
    #: authorizer loading the RBAC, not a refusal (:meth:`Reflector.refused`).
    authorizer_grace: float = 5.0


class _Retry(Exception):
    """The watch failed in a way that is fixed by watching again."""


def _rv(obj):
    return ((obj or {}).get('metadata') or {}).get('resourceVersion')


class Reflector:

    def __init__(self, api, resource, on_replace, on_event, namespace=None,
                 label_selector=None, timings=None, clock=time.monotonic,
                 rand=None, name=None, page=None):
        self.api = api
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.timings = timings or Timings()
        self.name = name or '%s/%s' % (namespace or '*', resource.plural)
        self.last_rv = None
        #: The error that ended the last list or watch, None when healthy.
        self.last_error = None
        #: Successful lists after the first one.
        self.relists = 0
        #: Watch requests after the first one.
        self.watch_restarts = 0
        self._listed = self._watched = False
        #: When the list under way started or last received a page.
        self._list_progress = None
        self._on_replace = on_replace
        self._page = page or list
        self._on_event = on_event
        self._clock = clock
        self._rand = rand or random.Random()
        self._backoff = backoff.Backoff(
            self.timings.backoff_initial, cap=self.timings.backoff_cap,
            reset_after=self.timings.backoff_reset, clock=clock,
            rand=self._rand.random)
        self._rv_unavailable = False
        self._rv_time = None
        self._gone_at = None
        #: Start of the current spell of failures and their count.
        self._failing_since = None
        self._after_outage = False
        self._forbidden_since = None
        self._failures = 0
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._response = None
        self._thread = None

    # lifecycle

    def start(self):
        self._list_progress = self._clock()  # the first list starts now
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='reflector ' + self.name)
        self._thread.start()

    def stop(self, timeout=10.0):
        """Stop the loop, cutting an open watch, and wait for the thread."""
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is not None:
            try:
                response.shutdown()
            except (ValueError, RuntimeError, OSError):
                pass  # already closed by the reflector thread
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self):
        return self._thread is not None and self._thread.is_alive()

    # loop

    def _run(self):
        need_list = True
        while not self._stopped.is_set():
            delay = 0.0
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch()
                self.last_error = None
                continue
            except apierrors.Gone as exc:
                need_list = True
                exc_seen = exc
                if self._relist_at_once():
                    LOG.info('%s: %s; relisting at once', self.name,
                             exc.message)
                    self.last_error = exc
                    continue
            except apierrors.TooManyRequests as exc:
                delay = exc.retry_after or 0.0
                exc_seen = exc
            except (apierrors.Unavailable, _Retry) as exc:
                exc_seen = exc
            except apierrors.ApiError as exc:
                if apierrors.too_large(exc):
                    # The server has not reached the resourceVersion we
                    # resume from (restored, or a lagging replica):
                    # relisting there would wait and fail the same way.
                    LOG.info('%s: resourceVersion %s is ahead of the '
                             'server; listing the latest', self.name,
                             self.last_rv)
                    self._rv_unavailable = True
                # 500: watch again; anything else (403, 404...): relist.
                need_list = need_list or exc.status != 500
                exc_seen = exc
            except Exception as exc:
                LOG.exception('%s: unexpected error; relisting', self.name)
                need_list = True
                exc_seen = exc
            if self._stopped.is_set():
                break
            delay = max(delay, self._backoff.next())
            self._failed(exc_seen, delay, need_list)
            self._stopped.wait(delay)

    def _relist_at_once(self):
        """Whether a 410 relists without a backoff (once per spell)."""
        now = self._clock()
        at_once = self._gone_at is None or \
            now - self._gone_at >= self.timings.backoff_reset
        self._gone_at = now
        return at_once

    def _failed(self, exc, delay, need_list):
        """Record and log a failed list or watch (once per kind a spell)."""
        repeated = type(exc) is type(self.last_error)
        self.last_error = exc
        if self._failing_since is None:
            self._failing_since = self._clock()
            self._failures = 0
            self._after_outage = isinstance(exc, (apierrors.Unavailable,
                                                  _Retry))
        if isinstance(exc, apierrors.Forbidden) and \
                self._forbidden_since is None:
            self._forbidden_since = self._clock()
        self._failures += 1
        if repeated:
            log = LOG.debug
        elif isinstance(exc, apierrors.Forbidden):
            log = LOG.error
        else:
            log = LOG.warning
        log('%s: %s: %s; retrying in %.2f s%s', self.name,
            type(exc).__name__, exc, delay,
            ' with a relist' if need_list else '')

    def refused(self):
        """The 403 of the last list or watch, once it is a refusal.

        A kube-apiserver that was just unreachable (restarted) refuses
        every request for a few seconds, until its authorizer has listed
        the RBAC objects; its 403s then name no revoked permission. 403s
        in a spell of failures that began with an outage count only after
        ``timings.authorizer_grace``: until then the cache keeps serving,
        as during the outage.
        """
        exc = self.last_error
        if not isinstance(exc, apierrors.Forbidden):
            return None
        if self._after_outage and self._forbidden_since is not None and \
                self._clock() - self._forbidden_since < \
                self.timings.authorizer_grace:
            return None
        return exc

    def _answered(self):
        """The server answered a list or a watch: the backoff restarts."""
        self.last_error = None
        self._forbidden_since = None
        self._backoff.reset()
        if self._failing_since is not None:
            LOG.info('%s: the API server answers again after %.1f s and %d '
                     'failed attempts', self.name,
                     self._clock() - self._failing_since, self._failures)
            self._failing_since = None

    # list

    def _list(self):
        self._list_progress = self._clock()
        try:
            self._list_once()
        finally:
            self._list_progress = None

    def _list_once(self):
        rv = None if self._rv_unavailable else self.last_rv
        try:
            items, list_rv = self._list_at(rv)
        except apierrors.ApiError as exc:
            if rv is None or not (isinstance(exc, apierrors.Gone) or
                                  apierrors.too_large(exc)):
                raise
            LOG.info('%s: resourceVersion %s unavailable (%s); listing the '
                     'latest', self.name, rv, exc.message)
            self._rv_unavailable = True
            items, list_rv = self._list_at(None)
        self._rv_unavailable = False
        self._set_rv(list_rv)
        self._on_replace(items, list_rv)
        self._answered()
        if self._listed:
            self.relists += 1
        self._listed = True

    def listing(self, within):
        """Whether a list is under way and progressed in ``within`` s.

        Progress: the list started, or received a page, that recently.
        """
        progress = self._list_progress
        return progress is not None and self._clock() - progress < within

    def _set_rv(self, rv):
        self.last_rv = rv
        self._rv_time = self._clock()

    def rv_age(self):
        """Seconds since ``last_rv`` changed (list, event or bookmark).

        None before the first list.
        """
        if self._rv_time is None:
            return None
        return max(0.0, self._clock() - self._rv_time)

    def _list_at(self, rv):
        """Every item and the list's resourceVersion (pages when rv unset).

        Each page goes through ``page`` as it arrives. An expired continue
        token makes one unpaginated list at ``rv`` (client-go's pager:
        ``FullListIfExpired``), which carries no continue: the loop ends.
        """
        limit = self.timings.page_size if rv is None else None
        items, token = [], None
        while True:
            try:
                page = self.api.list(self.resource, self.namespace,
                                     self.label_selector, rv, limit, token)
            except apierrors.Gone:
                if token is None:
                    raise
                LOG.info('%s: list continue token expired after %d items; '
                         'listing again without pages', self.name,
                         len(items))
                limit, items, token = None, [], None
                continue
            items += self._page(page.get('items') or [])
            self._list_progress = self._clock()
            meta = page.get('metadata') or {}
            token = meta.get('continue') if limit else None
            if not token:
                return items, meta['resourceVersion']

    # watch

    def _watch(self):
        if self._stopped.is_set():
            return  # stopped during the list: open no watch
        low, high = self.timings.watch_timeout
        timeout = max(1, int(round(self._rand.uniform(low, high))))
        started = self._clock()
        count = 0
        if self._watched:
            self.watch_restarts += 1
        self._watched = True
        response = self.api.watch(
            self.resource, self.namespace, self.label_selector,
            self.last_rv, timeout, self.timings.read_timeout)
        with self._lock:
            self._response = response
        self._answered()
        try:
            if self._stopped.is_set():
                return
            for event in stream.iter_events(
                    response.stream(None, decode_content=True)):
                count += 1
                self._handle(event)
        except urllib3.exceptions.ReadTimeoutError:
            LOG.info('%s: no data for %.1f s; watching again', self.name,
                     self.timings.read_timeout)
            return
        except (urllib3.exceptions.HTTPError, OSError,
                stream.TruncatedStream, ValueError) as exc:
            raise _Retry('watch dropped after %d events: %s'
                         % (count, exc)) from exc
        finally:
            with self._lock:
                self._response = None
            response.close()
            response.release_conn()
        if count == 0 and self._clock() - started < self.timings.short_watch:
            raise _Retry('watch closed without any event')
        LOG.debug('%s: watch closed after %d events at %s', self.name,
                  count, self.last_rv)

    def _handle(self, event):
        kind, obj = event.get('type'), event.get('object') or {}
        if kind == 'ERROR':
            raise apierrors.from_status(obj).about(
                'watch', self.resource, self.namespace)
        if kind in ('ADDED', 'MODIFIED', 'DELETED'):
            self._on_event(kind, obj)
        elif kind != 'BOOKMARK':
            LOG.warning('%s: unknown watch event type %r', self.name, kind)
            return
        if _rv(obj):
            self._set_rv(_rv(obj))
