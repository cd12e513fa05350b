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
"""The security log's Events: aggregated, coalesced and rate-limited.

As client-go's EventRecorder does (its aggregator, its logger and its
spam filter), each process writes:

* **One Event per reason, account and window.** The occurrences of one
  reason for one account within one window of :data:`WINDOW` seconds
  (aligned on the clock, so every process and replica derives the same
  Event name) are one Event, whatever the clients' addresses. A user
  name that is no account, and a refusal that names none, count for the
  account :data:`UNKNOWN`: neither made-up names nor addresses make new
  Events. The Event keeps the message of its first occurrence (naming
  its client); its ``count``, its ``lastTimestamp`` and the distinct
  clients it counts (:data:`~sushy_kubevirt.kubevirt.logentries.CLIENTS`;
  each process adds those it saw, at most :data:`CLIENTS_KEPT` per
  Event, so a client two processes saw counts twice) grow.
* **The first at once, the rest coalesced, never in the request.** A
  request only counts in memory: a thread of the process creates a new
  Event at once, and adds later occurrences at most every
  :data:`COALESCE` seconds per Event, and at exit. So a refusal costs no
  write, whether its user name is an account (a new Event in its
  window) or not (:data:`UNKNOWN`'s, written already): its time does not
  tell which.
* **A bounded rate.** Writes take a token from a bucket of the process,
  :data:`BURST` at once, then :data:`RATE` per second; a count waiting
  for a token stays in memory.

An update is a JSON patch that tests the resourceVersion this process's
watch holds: if another process wrote the Event since, it fails, and is
computed again from the watch at the next flush; no occurrence is lost
to a concurrent writer. What cannot be written (the API server refuses
it, :data:`RECORDS` Events are held already, or its window ended
:data:`WINDOW` seconds ago) is logged and counted (:func:`metrics_text`).
"""

import atexit
import collections
import datetime
import logging
import os
import threading
import time

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import limiter
from sushy_kubevirt.kube import resources
from sushy_kubevirt.kubevirt import logentries

LOG = logging.getLogger(__name__)
#: Seconds of the windows whose occurrences one Event counts.
WINDOW = 600
#: Least seconds between two writes of one Event.
COALESCE = 5.0
#: Writes per process: at once, then per second.
BURST, RATE = 25, 0.2
#: Events a process holds counts of at most.
RECORDS = 1024
#: Distinct clients a process counts per Event at most.
CLIENTS_KEPT = 256
#: The account of user names that are no account.
UNKNOWN = 'unknown'
#: Seconds between two flushes, and the most an exit waits for one.
TICK, EXIT_WAIT = 1.0, 5.0

_counts = collections.Counter()
_counts_lock = threading.Lock()


def _count(outcome, times):
    with _counts_lock:
        _counts[outcome] += times


class _Held:
    """The occurrences of one Event this process has not written yet."""

    def __init__(self, name, text, first, ends):
        self.name, self.text = name, text
        self.first = self.last = first
        self.ends = ends            # when its window ends (epoch seconds)
        self.times = 0              # occurrences to add
        self.clients = set()
        self.new_clients = 0        # of them, clients to add
        self.exists = False         # the Event was created (by anyone)
        self.busy = False           # a write of it is under way
        self.due = 0.0              # its next write (time.monotonic)

    def add(self, client, now):
        self.times += 1
        self.last = max(self.last, now)
        if client not in self.clients and \
                len(self.clients) < CLIENTS_KEPT:
            self.clients.add(client)
            self.new_clients += 1


class Recorder:
    """The security log's writes of this process.

    :param watch: the :class:`~.labelwatch.LabelWatch` of the log (its
        connection writes, its cache is read back).
    :param involved: the Events' ``involvedObject``.
    """

    def __init__(self, watch, namespace, involved, instance):
        self.watch = watch
        self.namespace = namespace
        self.involved = involved
        self.instance = instance
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._held = {}             # (reason, account, window): _Held
        self._bucket = limiter.TokenBucket(RATE, BURST)
        self._thread = None
        self._stopping = threading.Event()
        self._kick = threading.Event()      # a new Event to write now

    def note(self, reason, text, account=None, client=None, now=None):
        """Count an occurrence; the thread writes a new Event at once."""
        now = now or datetime.datetime.now(datetime.timezone.utc)
        window = int(now.timestamp() // WINDOW)
        key = (reason, account or UNKNOWN, window)
        with self._lock:
            held = self._held.get(key)
            if held is None and len(self._held) >= RECORDS:
                self._forget(time.time())
            if held is None and len(self._held) < RECORDS:
                start = datetime.datetime.fromtimestamp(
                    window * WINDOW, datetime.timezone.utc)
                held = self._held[key] = _Held(logentries.aggregate_name(
                    self.involved['name'], reason, key[1], start), text, now,
                    (window + 1) * WINDOW)
            if held is not None:
                held.add(client or UNKNOWN, now)
                if not held.exists:
                    self._kick.set()
                self._wake()
        if held is None:
            _count('unwritten', 1)
            LOG.warning('Security log record %s not written: %d Events '
                        'are held already', reason, RECORDS)

    def _forget(self, wall):
        """Drop what is written and whose window ended (lock held)."""
        for key, held in list(self._held.items()):
            if not held.times and not held.busy and wall >= held.ends:
                del self._held[key]

    def _wake(self):
        """Start the flushing thread unless it runs (lock held)."""
        if self._thread is None and not self._stopping.is_set():
            self._thread = threading.Thread(
                target=self._run, daemon=True,
                name='security log flush %s' % self.namespace)
            self._thread.start()

    def _run(self):
        while not self._stopping.is_set():
            self._kick.wait(TICK)
            self._kick.clear()
            if self._stopping.is_set():
                return
            self.flush()
            with self._lock:
                if not any(h.times or h.busy for h in self._held.values()):
                    self._thread = None
                    return

    def flush(self, force=False, deadline=None):
        """Write the counts that are due: all with ``force``, no token.

        :param deadline: a ``time.monotonic()`` no write starts after.
        """
        now, wall = time.monotonic(), time.time()
        chosen, lost = [], []
        with self._lock:
            for key, held in sorted(self._held.items(),
                                    key=lambda item: item[1].due):
                if held.busy:
                    continue
                if held.times and wall >= held.ends + WINDOW:
                    lost.append((key[0], held.times))
                    del self._held[key]
                elif held.times and (force or held.due <= now and
                                     self._bucket.take()):
                    held.busy = True
                    chosen.append((key[0], held))
            self._forget(wall)
        for reason, times in lost:
            _count('unwritten', times)
            LOG.warning('%d occurrences of security log record %s not '
                        'written within %d s', times, reason, WINDOW)
        for index, (reason, held) in enumerate(chosen):
            if deadline is not None and time.monotonic() > deadline:
                with self._lock:
                    for _, late in chosen[index:]:
                        late.busy = False
                break
            self._write(reason, held)

    def _write(self, reason, held):
        """Create ``held``'s Event, or add its count (``held`` is busy)."""
        with self._lock:
            times, clients, last = held.times, held.new_clients, held.last
            exists = held.exists
        outcome = 'again'
        try:
            live, cache = self.watch.started()
            if not exists:
                made = live.create(resources.EVENT, self.namespace,
                                   logentries.counted(logentries.record(
                                       self.namespace, self.involved,
                                       reason, held.text, last,
                                       self.instance,
                                       {logentries.LABEL: 'true'}),
                                       held.name, held.first, times,
                                       clients))
                cache.note_write(made)
                outcome = 'written'
            else:
                read = cache.get(self.namespace, held.name)
                if read is not None:
                    cache.note_write(live.patch(
                        resources.EVENT, self.namespace, held.name,
                        logentries.recount(read, times, clients, last)))
                    outcome = 'written'
        except apierrors.Conflict:
            exists = True       # created by another process, or written
        except apierrors.NotFound:
            exists = False      # expired or deleted: made again
        except apierrors.ApiError as exc:
            outcome = 'unwritten'
            LOG.warning('Cannot write the security log record %s (%d '
                        'occurrences): %s', reason, times, exc)
        with self._lock:
            held.busy = False
            held.exists = exists or outcome == 'written'
            if outcome != 'again':
                held.times -= times
                held.new_clients -= clients
            held.due = time.monotonic() + (TICK if outcome == 'again'
                                           else COALESCE)
            if held.times:
                self._wake()
        if outcome != 'again':
            _count(outcome, times)

    def held(self):
        """Occurrences counted and not written yet."""
        with self._lock:
            return sum(h.times for h in self._held.values())

    def stop(self, wait=EXIT_WAIT):
        """Stop flushing; write what is held, for ``wait`` seconds at most."""
        deadline = time.monotonic() + wait
        self._stopping.set()
        self._kick.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(wait)
        self.flush(force=True, deadline=deadline)


_recorders = {}
_recorders_lock = threading.Lock()
_exit_hook = []


def shared(watch, namespace, involved, instance):
    """This process's Recorder writing through ``watch``.

    The Recorders of other watches that hold nothing are dropped.
    """
    with _recorders_lock:
        if not _exit_hook:
            _exit_hook.append(atexit.register(stop))
        current = _recorders.get(watch)
        if current is None or current.pid != os.getpid():
            current = _recorders[watch] = Recorder(watch, namespace,
                                                   involved, instance)
        for other in [w for w, r in _recorders.items()
                      if w is not watch and not r.held()]:
            del _recorders[other]
    return current


def held():
    """Occurrences this process's Recorders have not written yet."""
    with _recorders_lock:
        return sum(r.held() for r in _recorders.values())


def stop():
    """Stop this process's Recorders, writing what they hold, briefly.

    At exit, and before the watches stop.
    """
    with _recorders_lock:
        mine = [_recorders.pop(w) for w, r in list(_recorders.items())
                if r.pid == os.getpid()]
    deadline = time.monotonic() + EXIT_WAIT
    for each in mine:
        each.stop(max(0.0, deadline - time.monotonic()))


def metrics_text():
    """Prometheus text: occurrences written, unwritten, held."""
    with _counts_lock:
        counts = dict(_counts)
    with _recorders_lock:
        mine = [r for r in _recorders.values() if r.pid == os.getpid()]
    held = sum(r.held() for r in mine)
    name = 'sushy_kubevirt_security_log_occurrences_total'
    lines = ['# HELP %s Security log occurrences by outcome: written '
             '(counted by an Event the API server accepted) or unwritten '
             '(lost, and logged).' % name, '# TYPE %s counter' % name]
    lines += ['%s{outcome="%s"} %d' % (name, outcome, counts.get(outcome, 0))
              for outcome in ('written', 'unwritten')]
    name = 'sushy_kubevirt_security_log_held'
    lines += ['# HELP %s Security log occurrences counted in memory, not '
              'written yet.' % name, '# TYPE %s gauge' % name,
              '%s %d' % (name, held)]
    return '\n'.join(lines) + '\n'
