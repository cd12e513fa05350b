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

"""Account lockout as DMTF's AccountService defines it, kept in Kubernetes.

``AccountLockoutThreshold`` failed logins in a row lock an account for
``AccountLockoutDuration`` seconds; the counter goes back to 0 after
``AccountLockoutCounterResetAfter`` seconds without a failure, and after
each successful login. A locked account is refused even with the right
password, with the same 401 as a wrong one.

Every worker and replica shares one Secret, :data:`NAME`, holding
``{user: [failures, last failure, locked until]}`` for the users of the
auth file only (a guessed user name costs nothing and adds nothing).
Each process reads it at most once per :data:`REFRESH` seconds (so a
lockout reaches every worker within that time) and writes it with a JSON
patch guarded by its resourceVersion, re-read live on conflict. A failed
login costs one write until the account is locked, none while it is; a
success writes only when there were failures to forget.
"""

import base64
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
_RETRIES = 5


@dataclasses.dataclass(frozen=True)
class Policy:
    #: Failed logins in a row that lock the account; 0: never locked.
    threshold: int = 5
    #: Seconds an account stays locked; 0: no lockout.
    duration: int = 60
    #: Seconds after the last failure when the counter goes back to 0.
    reset_after: int = 60

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
    defaults = Policy()
    result = Policy(
        _int(app_config, config.LOCKOUT_THRESHOLD_KEY, defaults.threshold),
        _int(app_config, config.LOCKOUT_DURATION_KEY, defaults.duration),
        _int(app_config, config.LOCKOUT_RESET_KEY, defaults.reset_after))
    if result.enabled and result.reset_after > result.duration:
        raise config.ConfigError(
            '%s (%d) must be at most %s (%d)' % (
                config.LOCKOUT_RESET_KEY, result.reset_after,
                config.LOCKOUT_DURATION_KEY, result.duration))
    return result


def _decode(secret):
    try:
        state = json.loads(base64.b64decode(secret['data'][DATA]))
    except (KeyError, TypeError, ValueError):
        return {}
    if not isinstance(state, dict):
        return {}
    return {user: entry for user, entry in state.items()
            if isinstance(entry, list) and len(entry) == 3
            and all(isinstance(v, int) and not isinstance(v, bool)
                    for v in entry)}


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

    def _locked(self, entry, now):
        return entry is not None and entry[2] > now

    def attempt(self, user, correct):
        """Count a login of ``user`` (in the auth file); True: let it in.

        While the API server cannot be reached, the last state read
        applies and nothing is counted (logged).
        """
        if not self.policy.enabled:
            return correct
        now = int(self._clock())
        try:
            state = self._read()[2]
        except apierrors.ApiError as exc:
            # The passwords are still checked; the lockout goes on from
            # the last state read once the API server answers again.
            LOG.warning('Cannot read the account lockout: %s',
                        type(exc).__name__)
            state = self._copy[2] if self._copy else {}
        entry = state.get(user)
        if self._locked(entry, now):
            return False
        if correct:
            if entry is not None:
                self._write(user, lambda old: None)
            return True
        self._write(user, lambda old: self._failed(old, now))
        if self._copy and self._locked(self._copy[2].get(user), now):
            securitylog.note(self.cluster, self.namespace,
                             'AccountLockedOut', 'Account %r locked for %d '
                             's after %d failed logins' % (
                                 user[:64], self.policy.duration,
                                 self.policy.threshold))
        return False

    def _write(self, user, change):
        try:
            self._update(user, change)
        except apierrors.ApiError as exc:
            LOG.warning('Cannot record a login in the account lockout: %s',
                        type(exc).__name__)

    def _failed(self, old, now):
        p = self.policy
        if self._locked(old, now):
            return old
        failures = old[0] if old and now - old[1] < p.reset_after else 0
        failures += 1
        until = now + p.duration if failures >= p.threshold else 0
        if until:
            LOG.warning('An account is locked for %d s after %d failed '
                        'logins', p.duration, failures)
        return [failures, now, until]

    def _prune(self, state, now):
        return {user: entry for user, entry in state.items()
                if self._locked(entry, now)
                or now - entry[1] < self.policy.reset_after}

    def _update(self, user, change):
        """Apply ``change(entry) -> entry or None`` to ``user``, guarded."""
        _, rv, state = self._read()
        for attempt in range(_RETRIES):
            now = int(self._clock())
            new = self._prune(state, now)
            entry = change(state.get(user))
            if entry is None:
                new.pop(user, None)
            else:
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
