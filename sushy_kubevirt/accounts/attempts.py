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

"""A login's password check and the defences around it.

Credentials a check of this process accepted lately are known good
(:class:`KnownGood`): they cost no check and are never throttled; only
the lockout (:mod:`.lockout`) may still refuse them. Any others cost a
check (bcrypt, or a TokenReview), paid from the budget of the client for
that account (:mod:`.throttle`): past it, :class:`Throttled` (a 429 with
``Retry-After``) and no check. A request's failures therefore never
throttle another's good credentials.
"""

import hmac
import secrets
import threading

import cachetools

from sushy_kubevirt.accounts import clients

#: Credentials remembered per cache.
REMEMBERED = 1024


class Throttled(Exception):
    """The client's budget of checks is spent: retry in ``wait`` s."""

    def __init__(self, wait):
        super().__init__(wait)
        self.wait = wait


class KnownGood:
    """Credentials a check accepted, at most :data:`REMEMBERED` (LRU).

    Kept as HMACs with a random key of this process: what it holds tells
    nothing of a password to whoever reads the memory.
    """

    def __init__(self, size=REMEMBERED):
        self._key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._known = cachetools.LRUCache(size)

    def key(self, *parts):
        """The key of credentials made of ``parts`` (bytes or str)."""
        mac = hmac.new(self._key, digestmod='sha256')
        for part in parts:
            part = part.encode('utf-8', 'surrogatepass') \
                if isinstance(part, str) else part
            mac.update(len(part).to_bytes(8, 'big') + part)
        return mac.digest()

    def __contains__(self, key):
        with self._lock:
            return self._known.get(key, False)

    def add(self, key):
        with self._lock:
            self._known[key] = True


class Guard:
    """The defences of the logins of ``client`` (a string).

    :param throttle: the process's :class:`~.throttle.Throttle`.
    :param lockout: the :class:`~.lockout.Lockout`, else None.
    """

    def __init__(self, client, throttle, lockout=None):
        self.client = client
        self.throttle = throttle
        self.lockout = lockout
        #: The account of the last check (None: a name that is no account).
        self.account = None

    def admit(self, account):
        """Take a check of ``account`` (None: no account) from the budget.

        :raises Throttled: it is spent.
        """
        wait = self.throttle.take((self.client, account))
        if wait:
            raise Throttled(wait)

    def settle(self, account, correct, checked, named=False):
        """Whether a login is let in: the lockout's say, for accounts.

        A successful check (``checked``) gives back what it took. A user
        name that is no account (``named``, ``account`` None) costs the
        lockout's read as an account's does, so the time does not tell.
        """
        allowed = correct
        if self.lockout is not None and (account is not None or named):
            allowed = self.lockout.attempt(account, self.client, correct)
        if checked and allowed:
            self.throttle.give_back((self.client, account))
        return allowed


def guard(store, environ):
    """The Guard of a login of the WSGI request ``environ``.

    :param store: the :class:`~.sessionstore.Store` (the policies, the
        throttle and the lockout of this process).
    """
    return Guard(clients.real(environ, store.policy.trusted_proxies),
                 store.throttle, store.lockout)


def verify(known, guard, account, parts, check):
    """Whether credentials are good: known, else ``check()`` says.

    :param known: a :class:`KnownGood`.
    :param guard: a :class:`Guard`, or None: no defences.
    :param account: the user name when it is an account, else None
        (``check`` is then a check of the same cost that fails).
    :param parts: what the credentials are: the user, the password and
        the version of the account's hash.
    :raises Throttled: a check was needed and the budget is spent.
    """
    key = known.key(*parts)
    if guard is not None:
        guard.account = account
    if account is not None and key in known:
        return guard is None or guard.settle(account, True, False)
    if guard is not None:
        guard.admit(account)
    correct = check() and account is not None
    allowed = correct if guard is None else guard.settle(
        account, correct, True, named=True)
    if allowed:
        known.add(key)
    return allowed
