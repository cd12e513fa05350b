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
user of the accounts (a guessed user name costs nothing and adds
nothing) ``{"all": [failures, last failure, locked until], "clients":
{client: [...]}, "good": [clients]}``, at most :data:`CLIENTS` clients
counted per account. Each process reads it at most once per
:data:`REFRESH` seconds (so a lockout reaches every worker within that
time) and writes it with a JSON patch guarded by its resourceVersion,
re-read live on conflict. A failed login costs one write until its
client is locked out, none while it is; a login writes only when its
client has failures to forget or is not among the good clients yet.
"""

import base64
import copy
import dataclasses
import json
import logging
import threading
import time

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
        self._lock = threading.Lock()
        self._copy = None   # (read at, resourceVersion or None, state)

    def _live(self):
        secret = self.cluster.get_secret(self.namespace, NAME)
        rv = secret['metadata'].get('resourceVersion') if secret else None
        return self._keep(rv, _decode(secret) if secret else {})

    def _keep(self, rv, state):
        copy = (self._monotonic(), rv, state)
        with self._lock:
            self._copy = copy
        return copy

    def _read(self):
        with self._lock:
            copy = self._copy
        if copy is None or self._monotonic() - copy[0] >= REFRESH:
            copy = self._live()
        return copy

    def _entry(self, user):
        with self._lock:
            state = self._copy[2] if self._copy else {}
        return state.get(user) or _EMPTY

    def _refused(self, entry, client, now):
        return _locked(entry['clients'].get(client), now) or (
            _locked(entry['all'], now) and client not in entry['good'])

    def attempt(self, user, client, correct):
        """Count a login of ``user`` (an account) from ``client``.

        True: let it in. While the API server cannot be reached, the
        last state read applies and nothing is counted (logged).
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
            return correct and not self._refused(self._entry(user), client,
                                                 now)
        entry = self._entry(user)
        if self._refused(entry, client, now):
            return False
        if correct:
            if client in entry['clients'] or client not in entry['good']:
                self._write(user, lambda old: self._succeeded(old, client))
            return True
        self._write(user, lambda old: self._failed(old, client, now))
        self._note(user, client, entry, self._entry(user), now)
        return False

    def _note(self, user, client, before, after, now):
        """Log a lockout the failure of ``client`` just caused."""
        p = self.policy
        whom = None
        if _locked(after['all'], now) and not _locked(before['all'], now):
            whom, count = 'all but its %d good clients' % len(
                after['good']), p.all_clients
        elif _locked(after['clients'].get(client), now):
            whom, count = client or 'unknown', p.threshold
        if whom:
            LOG.warning('An account is locked for %d s to %s after %d '
                        'failed logins', p.duration, whom, count)
            securitylog.note(self.cluster, self.namespace,
                             'AccountLockedOut', 'Account %r locked for %d '
                             's to %s after %d failed logins' % (
                                 user[:64], p.duration, whom, count),
                             user, client)

    def _write(self, user, change):
        try:
            self._update(user, change)
        except apierrors.ApiError as exc:
            LOG.warning('Cannot record a login in the account lockout: %s',
                        type(exc).__name__)

    def _counted(self, count, now, limit):
        p = self.policy
        failures = count[0] if count and now - count[1] < p.reset_after \
            else 0
        failures += 1
        return [failures, now, now + p.duration if failures >= limit else 0]

    def _failed(self, old, client, now):
        entry = copy.deepcopy(old)
        mine = entry['clients'].get(client)
        if not _locked(mine, now):
            entry['clients'][client] = self._counted(
                mine, now, self.policy.threshold)
            latest = sorted(entry['clients'].items(),
                            key=lambda item: item[1][1])[-CLIENTS:]
            entry['clients'] = dict(latest)
        if not _locked(entry['all'], now):
            entry['all'] = self._counted(entry['all'], now,
                                         self.policy.all_clients)
        return entry

    def _succeeded(self, old, client):
        entry = copy.deepcopy(old)
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

    def _update(self, user, change):
        """Apply ``change(entry) -> entry`` to ``user``, guarded."""
        _, rv, state = self._read()
        for attempt in range(_RETRIES):
            now = int(self._clock())
            new = {}
            for name, entry in state.items():
                if name == user:
                    entry = change(entry)
                entry = self._pruned(entry, now)
                if entry is not None:
                    new[name] = entry
            if user not in state:
                entry = self._pruned(change(_EMPTY), now)
                if entry is not None:
                    new[user] = entry
            if new == state:
                return
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
            self._keep(written['metadata'].get('resourceVersion'), new)
            return
