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

"""Account lockout, per account and client, kept in Kubernetes.

A client (:mod:`.clients`) whose logins as an account fail
``AccountLockoutThreshold`` times in a row is locked out of that account
for ``AccountLockoutDuration`` seconds, even with the right password and
with the same 401 as a wrong one; its count goes back to 0 after
``AccountLockoutCounterResetAfter`` seconds without a failure, and after
its successful login. Others' failures lock no one else out. So that
guesses from many clients stay bounded too, the account's failures from
all clients are counted as well: past ``all_clients`` in a row the
account is locked for the same duration to every client but its last
:data:`GOOD` that logged in as it (a stranger cannot join them without
the password). A login of the owner does not reset that count.

Every worker and replica shares one Secret, :data:`NAME`, holding per
user of the accounts ``{"all": [failures, last failure, locked until],
"clients": {client: [...]}, "good": [clients]}``, at most
:data:`CLIENTS` clients counted per account. Each process reads it at
most once per :data:`REFRESH` seconds (so a lockout reaches every worker
within that time), for a user name that is no account as for an
account, so that a refusal's time does not tell which names exist.

**Counted after the answer.** A login decides from the Secret read,
with the counts its own process has not written yet applied on top; its
count joins a queue of the process (at most :data:`QUEUED`) that one
thread writes after the answer: what is queued goes out in one JSON
patch guarded by the resourceVersion, re-read live and applied again on
conflict. So a refusal costs no write on its path, for an account or
not. A burst of wrong passwords is refused by its own process from the
:data:`threshold <Policy.threshold>`-th on, as before; another worker
or replica sees those failures once they are written and it read them
again: after one write and at most :data:`REFRESH` seconds. A queue
that is full makes a login wait for room (the API server is slower than
the failures come); a count the API server refuses is logged and lost,
as while it cannot be read, when the last state read applies and
nothing is counted. A failed login costs at most one write until its
client is locked out, none while it is; a login writes only when its
client has failures to forget or is not among the good clients yet.
"""

import atexit
import base64
import dataclasses
import functools
import json
import logging
import os
import threading
import time
import weakref

from sushy_kubevirt.accounts import securitylog
from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors

LOG = logging.getLogger(__name__)
NAME = 'sushy-account-lockout'
DATA = 'state'
#: Seconds a process trusts its copy of the lockout Secret.
REFRESH = 1.0
#: Clients that logged in as an account, kept per account.
GOOD = 16
#: Clients whose failures are counted per account (the latest).
CLIENTS = 64
#: Counts a process holds unwritten at most.
QUEUED = 1024
#: Seconds a login waits for room in a full queue at most; seconds an
#: idle writer thread lives.
WAIT, IDLE = 5.0, 10.0
_RETRIES = 5
_EMPTY = {'all': None, 'clients': {}, 'good': []}


@dataclasses.dataclass(frozen=True)
class Policy:
    #: Failed logins in a row of one client that lock it out of the
    #: account; 0: never locked.
    threshold: int = 5
    #: Seconds a lockout lasts; 0: no lockout.
    duration: int = 60
    #: Seconds after the last failure when a count goes back to 0.
    reset_after: int = 60
    #: Failed logins in a row from all clients that lock the account to
    #: all but its good clients.
    all_clients: int = 20

    @property
    def enabled(self):
        return self.threshold > 0 and self.duration > 0


def _int(app_config, key, default):
    value = app_config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise config.ConfigError('%s must be a whole number >= 0, not %r'
                                 % (key, value))
    return value


def policy(app_config):
    """The lockout :class:`Policy` of the emulator config.

    :raises sushy_kubevirt.config.ConfigError: naming the key.
    """
    threshold = _int(app_config, config.LOCKOUT_THRESHOLD_KEY,
                     Policy.threshold)
    result = Policy(
        threshold,
        _int(app_config, config.LOCKOUT_DURATION_KEY, Policy.duration),
        _int(app_config, config.LOCKOUT_RESET_KEY, Policy.reset_after),
        _int(app_config, config.LOCKOUT_ALL_CLIENTS_KEY, 4 * threshold))
    if result.enabled and result.reset_after > result.duration:
        raise config.ConfigError(
            '%s (%d) must be at most %s (%d)' % (
                config.LOCKOUT_RESET_KEY, result.reset_after,
                config.LOCKOUT_DURATION_KEY, result.duration))
    if result.enabled and result.all_clients < result.threshold:
        raise config.ConfigError(
            '%s (%d) must be at least %s (%d)' % (
                config.LOCKOUT_ALL_CLIENTS_KEY, result.all_clients,
                config.LOCKOUT_THRESHOLD_KEY, result.threshold))
    return result


def _count(value):
    return isinstance(value, list) and len(value) == 3 and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value)


def _entry(value):
    """A user's well-formed state, else None."""
    if not isinstance(value, dict):
        return None
    entry = dict(_EMPTY, **value)
    clients, good = entry['clients'], entry['good']
    if set(entry) != set(_EMPTY) or not (
            entry['all'] is None or _count(entry['all'])) or not (
            isinstance(clients, dict) and all(map(_count, clients.values()))
            and isinstance(good, list)
            and all(isinstance(c, str) for c in good)):
        return None
    return entry


def _decode(secret):
    try:
        state = json.loads(base64.b64decode(secret['data'][DATA]))
    except (KeyError, TypeError, ValueError):
        return {}
    if not isinstance(state, dict):
        return {}
    entries = ((user, _entry(value)) for user, value in state.items())
    return {user: entry for user, entry in entries if entry is not None}


def _copied(entry):
    """A copy of ``entry`` to change (its counts are replaced, not changed)."""
    return dict(entry, clients=dict(entry['clients']),
                good=list(entry['good']))


def _locked(count, now):
    return count is not None and count[2] > now


class Lockout:
    """The lockout state of ``namespace`` in ``cluster``."""

    def __init__(self, cluster, namespace, settings, clock=time.time,
                 monotonic=time.monotonic):
        self.cluster = cluster
        self.namespace = namespace
        self.policy = settings
        self._clock = clock
        self._monotonic = monotonic
        self._lock = threading.Condition()
        self._copy = None   # (read at, resourceVersion or None, state)
        self._queued = []   # (user, change, note), oldest first
        self._writing = []  # those the writer is writing
        self._unwritten = {}    # user: the changes of both, in order
        self._views = {}    # user: (generation, changes applied, entry)
        self._generation = 0    # the copy or the unwritten changes went
        self._writer = None     # (pid, thread)
        with _lockouts_lock:
            if not _exit_hook:
                _exit_hook.append(atexit.register(flush))
            _lockouts.add(self)

    def _live(self):
        at = self._monotonic()
        secret = self.cluster.get_secret(self.namespace, NAME)
        rv = secret['metadata'].get('resourceVersion') if secret else None
        return self._keep(at, rv, _decode(secret) if secret else {})

    def _keep(self, at, rv, state):
        """Keep what was read at ``at``, unless a later read is kept."""
        with self._lock:
            if self._copy is None or at >= self._copy[0]:
                self._copy = (at, rv, state)
                self._generation += 1
                self._views.clear()
            return self._copy

    def _read(self):
        with self._lock:
            copy = self._copy
        if copy is None or self._monotonic() - copy[0] >= REFRESH:
            copy = self._live()
        return copy

    def _entry(self, user):
        """``user``'s entry read, with the unwritten counts applied.

        Kept per user: each change is applied once per read or write.
        """
        with self._lock:
            generation = self._generation
            changes = list(self._unwritten.get(user, ()))
            entry = (self._copy[2] if self._copy else {}).get(user) or _EMPTY
            done, view = 0, entry
            if user in self._views:
                _, done, view = self._views[user]
        for change in changes[done:]:
            view = change(view)
        with self._lock:
            if self._generation == generation:
                self._views[user] = (generation, len(changes), view)
        return view

    def _refused(self, entry, client, now):
        return _locked(entry['clients'].get(client), now) or (
            _locked(entry['all'], now) and client not in entry['good'])

    def attempt(self, user, client, correct):
        """Count a login of ``user`` (an account) from ``client``.

        True: let it in. ``user`` None (a name that is no account) is
        refused at the same cost, and counted nowhere. While the API
        server cannot be reached, the last state read applies and
        nothing is counted (logged).
        """
        if not self.policy.enabled:
            return correct
        now = int(self._clock())
        try:
            self._read()
        except apierrors.ApiError as exc:
            # The passwords are still checked; the lockout goes on from
            # the last state read once the API server answers again.
            LOG.warning('Cannot read the account lockout: %s',
                        type(exc).__name__)
            return user is not None and correct and not self._refused(
                self._entry(user), client, now)
        if user is None:
            return False
        entry = self._entry(user)
        if self._refused(entry, client, now):
            return False
        if correct:
            if client in entry['clients'] or client not in entry['good']:
                self._queue(user, lambda old: self._succeeded(old, client))
            return True
        change = functools.partial(self._failed, client=client, now=now)
        self._queue(user, change, self._note(user, client, entry,
                                             change(entry), now))
        return False

    def _note(self, user, client, before, after, now):
        """The security log record of a lockout a failure causes, or None."""
        p = self.policy
        whom = None
        if _locked(after['all'], now) and not _locked(before['all'], now):
            whom, count = 'all but its %d good clients' % len(
                after['good']), p.all_clients
        elif _locked(after['clients'].get(client), now):
            whom, count = client or 'unknown', p.threshold
        if not whom:
            return None
        return (p.duration, whom, count, 'Account %r locked for %d s to %s '
                'after %d failed logins' % (user[:64], p.duration, whom,
                                            count), user, client)

    def _queue(self, user, change, note=None):
        """Have ``change`` written after the answer (waits while full)."""
        with self._lock:
            if len(self._queued) >= QUEUED and not self._lock.wait_for(
                    lambda: len(self._queued) < QUEUED, WAIT):
                LOG.warning('Account lockout count not recorded: %d '
                            'counts are waiting for the API server', QUEUED)
                return
            self._queued.append((user, change, note))
            self._unwritten.setdefault(user, []).append(change)
            pid, thread = self._writer or (None, None)
            if pid != os.getpid() or not thread.is_alive():
                thread = threading.Thread(target=self._run, daemon=True,
                                          name='account lockout writer')
                self._writer = (os.getpid(), thread)
                thread.start()
            self._lock.notify_all()

    def _run(self):
        while True:
            with self._lock:
                if not self._lock.wait_for(lambda: self._queued, IDLE):
                    self._writer = None
                    return
                self._writing, self._queued = self._queued, []
                self._lock.notify_all()
            self._write(self._writing)

    def _write(self, batch):
        written = None
        try:
            written = self._update(batch)
        except apierrors.ApiError as exc:
            LOG.warning('Cannot record %d logins in the account lockout: '
                        '%s', len(batch), type(exc).__name__)
        finally:
            with self._lock:    # the copy and the queue change at once
                if written:
                    self._keep(*written)
                for user, _, _ in self._writing:
                    changes = self._unwritten[user]
                    del changes[0]
                    if not changes:
                        del self._unwritten[user]
                self._writing = []
                self._generation += 1
                self._views.clear()
                self._lock.notify_all()
        for note in (n for _, _, n in batch if n):
            duration, whom, count, text, user, client = note
            LOG.warning('An account is locked for %d s to %s after %d '
                        'failed logins', duration, whom, count)
            securitylog.note(self.cluster, self.namespace,
                             'AccountLockedOut', text, user, client)

    def flush(self, timeout=WAIT):
        """Wait until the counts queued are written; False: not yet."""
        with self._lock:
            return self._lock.wait_for(
                lambda: not self._queued and not self._writing, timeout)

    def _counted(self, count, now, limit):
        p = self.policy
        failures = count[0] if count and now - count[1] < p.reset_after \
            else 0
        failures += 1
        return [failures, now, now + p.duration if failures >= limit else 0]

    def _failed(self, old, client, now):
        entry = _copied(old)
        mine = entry['clients'].get(client)
        if not _locked(mine, now):
            entry['clients'][client] = self._counted(
                mine, now, self.policy.threshold)
            if len(entry['clients']) > CLIENTS:
                entry['clients'] = dict(sorted(
                    entry['clients'].items(),
                    key=lambda item: item[1][1])[-CLIENTS:])
        if not _locked(entry['all'], now):
            entry['all'] = self._counted(entry['all'], now,
                                         self.policy.all_clients)
        return entry

    def _succeeded(self, old, client):
        entry = _copied(old)
        entry['clients'].pop(client, None)
        if client not in entry['good']:
            entry['good'] = (entry['good'] + [client])[-GOOD:]
        return entry

    def _pruned(self, entry, now):
        """``entry`` without the counts that ended; None when empty."""
        def live(count):
            return _locked(count, now) or \
                now - count[1] < self.policy.reset_after
        result = {'all': entry['all'] if entry['all'] and live(entry['all'])
                  else None,
                  'clients': {c: count for c, count in
                              entry['clients'].items() if live(count)},
                  'good': entry['good']}
        return result if result != _EMPTY else None

    def _applied(self, state, batch, now):
        """``state`` with ``batch``'s changes applied, pruned."""
        new = dict(state)
        for user, change, _ in batch:
            new[user] = change(new.get(user) or _EMPTY)
        pruned = ((user, self._pruned(entry, now))
                  for user, entry in new.items())
        return {user: entry for user, entry in pruned if entry is not None}

    def _update(self, batch):
        """Apply ``batch``'s changes in one write, guarded.

        :returns: what to keep of what was written, or None.
        """
        _, rv, state = self._read()
        for attempt in range(_RETRIES):
            new = self._applied(state, batch, int(self._clock()))
            if new == state:
                return None
            data = base64.b64encode(json.dumps(
                new, sort_keys=True).encode()).decode()
            try:
                if rv is None:
                    written = self.cluster.create_secret(self.namespace, {
                        'apiVersion': 'v1', 'kind': 'Secret',
                        'type': 'Opaque', 'metadata': {'name': NAME},
                        'data': {DATA: data}})
                else:
                    written = self.cluster.patch_secret(
                        self.namespace, NAME, [
                            {'op': 'test', 'path': '/metadata/'
                             'resourceVersion', 'value': rv},
                            {'op': 'add', 'path': '/data/' + DATA,
                             'value': data}])
            except (apierrors.Conflict, apierrors.NotFound):
                if attempt == _RETRIES - 1:
                    raise
                _, rv, state = self._live()
                continue
            return (self._monotonic(),
                    written['metadata'].get('resourceVersion'), new)


_lockouts = weakref.WeakSet()
_lockouts_lock = threading.Lock()
_exit_hook = []


def flush(timeout=WAIT):
    """Write what every Lockout of this process queued, briefly (exit)."""
    deadline = time.monotonic() + timeout
    for each in list(_lockouts):
        each.flush(max(0.0, deadline - time.monotonic()))
