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

"""Requests that hold a server thread long, bounded per process and account.

An event stream holds its thread for as long as it lasts, a large
``$expand`` for as long as it fetches. Together they may hold all the
threads of the process but one, when the server's thread count is known
(:func:`server_threads`), so a plain request always finds a thread; each
kind has its own :class:`Limit` per process and per account. A request
past them is a 503 ``ServiceTemporarilyUnavailable`` with
``Retry-After``; a :class:`Limit` may let a few wait for a slot first,
the earliest whose account is under its bound served first.
"""

import collections
import contextlib
import os
import sys
import threading
import time
import types

from sushy_kubevirt import errormap

#: Threads held by every :class:`Limit` (running or waiting) and the
#: Condition their changes are announced on.
_changed = threading.Condition()
_held = [0]
#: This process's server thread count, found once: (pid, count).
_threads = [None]


def _gunicorn_threads():
    """The gunicorn worker's threads, from the main thread's stack.

    gunicorn tells the application neither its worker nor its settings;
    the worker runs in the main thread, ``self`` of a frame there.
    """
    gthread = sys.modules.get('gunicorn.workers.gthread')
    sync = sys.modules.get('gunicorn.workers.sync')
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        worker = frame.f_locals.get('self')
        if gthread and isinstance(worker, gthread.ThreadWorker):
            return worker.cfg.threads
        if sync and isinstance(worker, sync.SyncWorker):
            return 1
        frame = frame.f_back
    return None   # an asynchronous worker: no thread per request


def server_threads(environ):
    """Threads serving this process's requests; None: unknown or unbound.

    Known for gunicorn's ``gthread`` and ``sync`` workers, waitress and
    Werkzeug's server (unbound when threaded).
    """
    waitress = environ.get('waitress.client_disconnected')
    if waitress is not None:
        return waitress.__self__.adj.threads
    if 'werkzeug.socket' in environ:
        return None if environ.get('wsgi.multithread') or \
            environ.get('wsgi.multiprocess') else 1
    if 'gunicorn.socket' not in environ:
        return None
    pid = os.getpid()
    if _threads[0] is None or _threads[0][0] != pid:
        _threads[0] = (pid, _gunicorn_threads())
    return _threads[0][1]


def connection(environ):
    """The socket of this request's connection, when the server tells."""
    waitress = environ.get('waitress.client_disconnected')
    if waitress is not None:
        return waitress.__self__.socket
    return environ.get('gunicorn.socket') or environ.get('werkzeug.socket')


class Limit:
    """At most ``per_process`` holders, ``per_account`` of each account.

    :param what: what is held, for the 503's message ("event streams").
    :param waiting: requests that may wait for a slot (each holds its
        thread meanwhile), at most ``per_account`` of each account.
    :param wait: seconds one waits at most.
    :param retry_after: the 503's ``Retry-After``.
    :param brief: its requests end on their own, so one may take the
        only thread of a server that has one (a stream would for good).
    """

    def __init__(self, what, per_process, per_account, waiting=0, wait=0.0,
                 retry_after=5, brief=False):
        self.what, self.per_process, self.per_account = (
            what, per_process, per_account)
        self.waiting, self.wait, self.retry_after = waiting, wait, retry_after
        self.brief = brief
        self.running = collections.Counter()
        self.queue = []

    def _refuse(self, reason):
        return errormap.unavailable(
            '%s; retry in %d seconds' % (reason, self.retry_after),
            self.retry_after)

    def _full(self, account):
        return sum(self.running.values()) >= self.per_process or (
            account is not None and
            self.running[account] >= self.per_account)

    def _turn(self, waiter):
        """Whether ``waiter`` is the earliest waiter that may run."""
        for earlier in self.queue:
            if earlier is waiter:
                return not self._full(waiter.account)
            if not self._full(earlier.account):
                return False
        return False

    def _check(self, account, threads):
        """Raise the 503 for a request that may neither run nor wait."""
        if threads is not None and _held[0] >= max(
                threads - 1, 1 if self.brief else 0):
            raise self._refuse(
                'This process serves requests with %d thread(s): %s and the '
                'like may hold all but one' % (threads, self.what))
        if not self._full(account):
            return
        if account is not None and \
                self.running[account] >= self.per_account and \
                sum(w.account == account for w in self.queue) >= \
                min(self.per_account, self.waiting):
            raise self._refuse('Account %s holds %d %s, the most one '
                               'account may' % (account, self.per_account,
                                                self.what))
        if len(self.queue) >= self.waiting:
            raise self._refuse('%d %s are open in this process, the most '
                               'it serves' % (self.per_process, self.what))

    def acquire(self, account, threads):
        """Take a slot for ``account``, waiting if allowed, else a 503.

        ``account`` None (no authentication) has no bound of its own;
        ``threads`` is :func:`server_threads`' answer.
        """
        with _changed:
            self._check(account, threads)
            _held[0] += 1
            waiter = types.SimpleNamespace(account=account)
            self.queue.append(waiter)
            deadline = time.monotonic() + self.wait
            try:
                while not self._turn(waiter):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        _held[0] -= 1
                        raise self._refuse(
                            '%d %s are open in this process, the most it '
                            'serves' % (self.per_process, self.what))
                    _changed.wait(left)
                self.running[account] += 1
            finally:
                self.queue.remove(waiter)
                _changed.notify_all()

    def release(self, account):
        """Give back ``account``'s slot."""
        with _changed:
            self.running[account] -= 1
            if not self.running[account]:
                del self.running[account]
            _held[0] -= 1
            _changed.notify_all()

    @contextlib.contextmanager
    def held(self, account, threads):
        """A slot for the duration of a ``with`` block."""
        self.acquire(account, threads)
        try:
            yield
        finally:
            self.release(account)
