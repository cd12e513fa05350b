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

"""Accounts kept as Kubernetes Secrets, one Secret each.

With ``SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE = 'secrets'`` account
``<user>`` is the Secret ``sushy-user-<user>`` (label :data:`LABEL`) of
the sessions' namespace; its data hold :data:`USERNAME`, the bcrypt hash
of the password (:data:`PASSWORD_HASH`, never the password), the
:data:`ROLE` and optionally the :data:`NAMESPACES` (comma-separated) and
label :data:`SELECTOR` it reaches: the model of
:class:`~sushy_kubevirt.accounts.accountsfile.Account`.

Each process reads them from its own watch cache, so every worker and
replica agrees and a warm request makes no API call; writes are live,
guarded by the Secret's resourceVersion and overlaid on the cache.
Credentials a bcrypt check accepted are known good
(:class:`~.attempts.KnownGood`) with the Secret's resourceVersion: a new
password or a deleted account counts at once.
"""

import base64
import binascii
import functools
import logging
import re
import threading

import bcrypt

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import attempts
from sushy_kubevirt.accounts import labelwatch
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources

LOG = logging.getLogger(__name__)
LABEL = 'sushy-kubevirt.io/account'
PREFIX = 'sushy-user-'
USERNAME, PASSWORD_HASH, ROLE = 'username', 'password-hash', 'role'
NAMESPACES, SELECTOR = 'namespaces', 'selector'
#: A user name: a DNS label that fits in a Secret name.
USER_NAME = re.compile(r'^[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?$')
#: bcrypt reads at most this many bytes of a password.
MAX_PASSWORD = 72
MIN_PASSWORD = 8
COST = 12
_RETRIES = 5


def _text(data, key):
    value = data.get(key)
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True).decode('utf-8')
    except (binascii.Error, TypeError, ValueError):
        raise ValueError('%s is not base64 UTF-8' % key) from None


def _b64(text):
    return base64.b64encode(text.encode('utf-8')).decode('ascii')


def parse(secret):
    """``(Account, bcrypt hash bytes)`` of an account Secret.

    :raises ValueError: it is not a well-formed account.
    """
    data = secret.get('data') or {}
    user = _text(data, USERNAME)
    if secret['metadata'].get('name') != PREFIX + (user or ''):
        raise ValueError('%s does not match the Secret name' % USERNAME)
    digest = (_text(data, PASSWORD_HASH) or '').encode('ascii', 'replace')
    if digest[:4] not in (b'$2a$', b'$2b$', b'$2y$') or len(digest) != 60:
        raise ValueError('%s is not a bcrypt hash' % PASSWORD_HASH)
    entry = {'role': _text(data, ROLE)}
    namespaces = _text(data, NAMESPACES)
    if namespaces is not None:
        entry['namespaces'] = [n.strip() for n in namespaces.split(',')]
    if _text(data, SELECTOR) is not None:
        entry['selector'] = _text(data, SELECTOR)
    try:
        return accountsfile.make_account(user, entry, 'Secret'), digest
    except accountsfile.AccountsError as exc:
        raise ValueError(str(exc)) from None


def hash_password(password):
    """The bcrypt hash (str) of ``password`` (str)."""
    return bcrypt.hashpw(password.encode('utf-8', 'surrogatepass'),
                         bcrypt.gensalt(COST)).decode('ascii')


def data(account, digest=None):
    """The Secret data of ``account`` (and of a password hash)."""
    result = {USERNAME: account.name, ROLE: account.role}
    if digest is not None:
        result[PASSWORD_HASH] = digest
    if account.namespaces is not None:
        result[NAMESPACES] = ','.join(sorted(account.namespaces))
    if account.selector is not None:
        result[SELECTOR] = account.selector
    return {k: _b64(v) for k, v in result.items()}


@functools.lru_cache(maxsize=1)
def _dummy():
    return bcrypt.hashpw(b'no such user', bcrypt.gensalt(COST))


def _checkpw(password, digest):
    if len(password) > MAX_PASSWORD:
        bcrypt.checkpw(password[:MAX_PASSWORD], digest)   # same cost
        return False
    try:
        return bcrypt.checkpw(password, digest)
    except ValueError:
        return False


class SecretAccounts:
    """The account Secrets of ``namespace``, read from a watch cache.

    :param cluster: the :class:`~sushy_kubevirt.kube.cluster.Cluster`
        whose settings (kubeconfig, rate) and accounting are used.
    """

    def __init__(self, cluster, namespace):
        self.cluster = cluster
        self.namespace = namespace
        self._known = attempts.KnownGood()

    def _synced(self):
        """``(live Api, informer)`` once synced; else AccountsError."""
        try:
            return labelwatch.shared(self.cluster, self.namespace,
                                     LABEL).synced()
        except apierrors.Unavailable:
            raise accountsfile.AccountsError(
                'The account Secrets of namespace %s cannot be read'
                % self.namespace) from None

    def secret(self, user):
        """The cached Secret of ``user``, else None."""
        if not isinstance(user, str) or not USER_NAME.match(user):
            return None
        return self._synced()[1].get(self.namespace, PREFIX + user)

    def _parsed(self, secret):
        try:
            return parse(secret)
        except (ValueError, KeyError) as exc:
            LOG.warning('Secret %s/%s is not a valid account: %s',
                        self.namespace, secret['metadata'].get('name'), exc)
            return None

    # reads

    def account(self, user, groups=()):
        """The Account of ``user``, else None (``groups``: ignored).

        :raises accountsfile.AccountsError: the Secrets cannot be read.
        """
        secret = self.secret(user)
        parsed = secret and self._parsed(secret)
        return parsed[0] if parsed else None

    def accounts(self):
        """Every well-formed account, by user name."""
        found = (self._parsed(s) for s in self._synced()[1].list())
        return sorted((p[0] for p in found if p), key=lambda a: a.name)

    def verify(self, user, password, guard=None):
        """Whether ``password`` (bytes) is ``user``'s; one bcrypt at most.

        None for known-good credentials. With a ``guard``
        (:class:`~.attempts.Guard`) the check is throttled and the login
        of an existing account counted by the lockout.

        :raises attempts.Throttled: the client's budget is spent.
        """
        secret = self.secret(user)
        parsed = secret and self._parsed(secret)
        digest = parsed[1] if parsed else _dummy()
        version = secret['metadata']['resourceVersion'] if parsed else ''
        return attempts.verify(
            self._known, guard, user if parsed else None,
            (user, password, version), lambda: _checkpw(password, digest))

    # writes

    def create(self, account, password):
        """Create ``account`` with ``password`` (str).

        :raises apierrors.Conflict: the account exists.
        """
        live, cache = self._synced()
        made = live.create(resources.SECRET, self.namespace, {
            'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
            'metadata': {'name': PREFIX + account.name,
                         'labels': {LABEL: 'true'}},
            'data': data(account, hash_password(password))})
        cache.note_write(made)
        return made

    def update(self, user, change, version=None):
        """Apply ``change(account) -> (Account, password or None)``.

        Computed from the cached Secret and written with a JSON patch
        whose ``test`` of its resourceVersion makes a concurrent change
        fail; then it is computed again from a live read. With
        ``version`` (an If-Match) only that version is changed.

        :raises apierrors.NotFound: no such account.
        :raises apierrors.Conflict: ``version`` is not the current one.
        """
        live, cache = self._synced()
        secret = cache.get(self.namespace, PREFIX + user)
        for attempt in range(_RETRIES):
            parsed = secret and self._parsed(secret)
            if not parsed:
                raise apierrors.NotFound('no account %s' % user)
            version_now = secret['metadata']['resourceVersion']
            if version is not None and version != version_now:
                raise apierrors.Conflict('account %s changed' % user)
            account, password = change(parsed[0])
            new = data(account, None if password is None
                       else hash_password(password))
            new.setdefault(PASSWORD_HASH, secret['data'][PASSWORD_HASH])
            ops = [{'op': 'test', 'path': '/metadata/resourceVersion',
                    'value': version_now},
                   {'op': 'replace', 'path': '/data', 'value': new}]
            try:
                made = live.patch(resources.SECRET, self.namespace,
                                  PREFIX + user, ops)
            except apierrors.Conflict:
                if version is not None or attempt == _RETRIES - 1:
                    raise
                try:
                    secret = live.get(resources.SECRET, self.namespace,
                                      PREFIX + user)
                except apierrors.NotFound:
                    secret = None
                continue
            cache.note_write(made)
            return made

    def delete(self, user, version=None):
        """Delete ``user``'s Secret (of ``version`` when given).

        :raises apierrors.NotFound: no such account.
        :raises apierrors.Conflict: it changed (``version``) or was made
            again since it was read.
        """
        live, cache = self._synced()
        secret = cache.get(self.namespace, PREFIX + user)
        if secret is None:
            raise apierrors.NotFound('no account %s' % user)
        meta = secret['metadata']
        guard = {'uid': meta['uid']}
        if version is not None:
            guard['resourceVersion'] = version
        live.delete(resources.SECRET, self.namespace, PREFIX + user,
                    preconditions=guard)
        cache.note_delete(self.namespace, PREFIX + user)


_shared = {}
_shared_lock = threading.Lock()


def shared(cluster, namespace):
    """The process's SecretAccounts of ``namespace`` for ``cluster``.

    One per process: one for other settings is dropped.
    """
    key = (cluster.settings, namespace)
    with _shared_lock:
        if key not in _shared:
            _shared.clear()
            _shared[key] = SecretAccounts(cluster, namespace)
        return _shared[key]


def stop():
    """Forget this process's accounts (their cache: labelwatch.stop)."""
    with _shared_lock:
        _shared.clear()
