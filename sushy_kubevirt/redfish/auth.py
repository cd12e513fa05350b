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

"""WSGI authentication for the kubevirt driver: Redfish sessions and Basic.

sushy-tools' ``Application.configure`` wraps ``wsgi_app`` in its
``RedfishAuthMiddleware`` (HTTP Basic against the htpasswd file
``SUSHY_EMULATOR_AUTH_FILE``). :func:`wrap` puts :class:`Middleware` in
its place; per request it does what the current config asks:

* no auth file (and neither the ``kubernetes`` nor the ``secrets``
  accounts source): everything passes, as in sushy-tools;
* a driver without sessions: sushy-tools' own middleware, unchanged;
* the kubevirt driver: an ``X-Auth-Token`` of a live session
  (:mod:`sushy_kubevirt.accounts.sessionstore`) or valid HTTP Basic
  credentials: of the htpasswd file or, with the ``kubernetes`` accounts
  source, a password that is a Kubernetes bearer token
  (:mod:`sushy_kubevirt.accounts.kubeaccounts`; the token's identity is
  the user, whatever user name is sent); with the ``secrets`` source,
  of the account Secrets (:mod:`sushy_kubevirt.accounts.secretaccounts`).
  The service root, ``$metadata``, ``odata`` and the login (``POST
  .../Sessions`` or ``.../Sessions/Members``, which checks the body's
  credentials itself) need none, as DSP0266 has it.

Every refusal is a 401 Redfish error (``NoValidSession``) with a
``WWW-Authenticate`` challenge - a malformed ``Authorization`` header
included. An unknown user costs the same bcrypt check as a wrong
password (against a dummy hash of the file's cost), so the answer time
does not tell which user names exist. Neither passwords nor tokens are
logged.

Credentials bcrypt accepted are known good (:mod:`sushy_kubevirt.
accounts.attempts`, at most 1,024 per process) until the file's entry
changes: the next request with them costs no check and is never
throttled. Others are checked while their client's budget for that
account lasts (:mod:`sushy_kubevirt.accounts.throttle`, per process),
then get a 429 with ``Retry-After`` and no check; the client comes from
the trusted proxies' headers (:mod:`sushy_kubevirt.accounts.clients`). A
client locked out of an account (:mod:`sushy_kubevirt.accounts.lockout`,
shared through Kubernetes) gets the same 401 as for a wrong password,
and so does a user the accounts file
(:mod:`sushy_kubevirt.accounts.accountsfile`) names not. bcrypt reads at
most 72 bytes of a password: a longer one is refused (after a check of
the same cost), never truncated.
"""

import base64
import binascii
import functools
import json
import logging

import bcrypt
from sushy_tools.emulator import main
from werkzeug import wrappers

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import attempts
from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt.accounts import secretaccounts
from sushy_kubevirt.accounts import securitylog
from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt import messages

LOG = logging.getLogger(__name__)
AUTH_FILE = config.AUTH_FILE_KEY
CHALLENGE = 'Basic realm="sushy-kubevirt"'
SESSIONS = 'redfish/v1/SessionService/Sessions'
#: Paths (without surrounding '/') readable without credentials.
OPEN = frozenset(['', 'redfish', 'redfish/v1', 'redfish/v1/odata',
                  'redfish/v1/$metadata', 'healthz'])
#: Paths a POST logs in to (the collection or its Members).
LOGIN = frozenset([SESSIONS, SESSIONS + '/Members'])
_BCRYPT = (b'$2y$', b'$2a$', b'$2b$')
_DEFAULT_COST = 12
#: bcrypt uses at most this many bytes of a password.
MAX_PASSWORD = 72
#: The WSGI environ key of the authenticated user (clients cannot set it).
USER_KEY = 'sushy_kubevirt.user'
#: ... and of their KubeAccount, when the cluster's RBAC decides access.
ACCOUNT_KEY = 'sushy_kubevirt.account'
#: The longest bearer token sent to the API server for review.
MAX_TOKEN = 16384
#: Credentials of the auth file bcrypt accepted lately.
_KNOWN = attempts.KnownGood()


def users(auth_file):
    """``{user: bcrypt hash}`` of an htpasswd file (bcrypt entries)."""
    result = {}
    with open(auth_file, 'rb') as lines:
        for line in lines:
            name, colon, digest = line.strip().partition(b':')
            if colon and digest[:4] in _BCRYPT:
                result.setdefault(name.decode('utf-8', 'replace'), digest)
    return result


@functools.lru_cache(maxsize=8)
def _dummy(cost):
    return bcrypt.hashpw(b'no such user', bcrypt.gensalt(cost))


def _cost(digest):
    try:
        return int(digest[4:6])
    except ValueError:
        return _DEFAULT_COST


def _checkpw(password, digest):
    """bcrypt's check, for any password: a refusal instead of an error."""
    try:
        if len(password) > MAX_PASSWORD:
            bcrypt.checkpw(password[:MAX_PASSWORD], digest)   # same cost
            return False
        return bcrypt.checkpw(password, digest)
    except ValueError:   # a malformed hash in the auth file
        LOG.warning('An entry of %s is not a valid bcrypt hash', AUTH_FILE)
        return False


def verify(auth_file, user, password, guard=None):
    """True when ``user``/``password`` (str, bytes) match the file.

    One bcrypt check whatever the outcome, but none for known-good
    credentials (remembered with the file's hash: a changed or removed
    entry is checked anew). With a ``guard``
    (:class:`~sushy_kubevirt.accounts.attempts.Guard`), the check is
    throttled and the login of a user of the file counted by the lockout.

    :raises attempts.Throttled: the client's budget of checks is spent.
    """
    known = users(auth_file)
    costs = [_cost(d) for d in known.values()] or [_DEFAULT_COST]
    digest = known.get(user) or _dummy(max(set(costs), key=costs.count))
    return attempts.verify(
        _KNOWN, guard, user if user in known else None,
        (user, password, digest), lambda: _checkpw(password, digest))


def basic_credentials(header):
    """``(user, password bytes)`` of a Basic header, else None."""
    scheme, _, token = (header or '').strip().partition(' ')
    if scheme.lower() != 'basic':
        return None
    try:
        pair = base64.b64decode(token.strip(), validate=True)
        user, colon, password = pair.partition(b':')
        if not colon:
            return None
        return user.decode('utf-8'), password
    except (binascii.Error, ValueError):
        return None


def _refusal(detail, code=401, message_id='NoValidSession', args=(),
             headers=None):
    exc = messages.RedfishError(message_id, *args, code=code, detail=detail)
    response = wrappers.Response(
        json.dumps(messages.body(exc, code)), status=code,
        content_type='application/json')
    response.headers['OData-Version'] = '4.0'
    if code == 401:
        response.headers['WWW-Authenticate'] = CHALLENGE
    response.headers.update(headers or {})
    return response


class Middleware(main.RedfishAuthMiddleware):
    """``app.wsgi_app`` (see the module docstring).

    A subclass of sushy-tools' middleware only so that its ``configure``
    (which wraps ``wsgi_app`` unless it already is one) leaves it alone;
    nothing of the parent class is used.

    :param app: the Flask application (its config is read per request).
    :param wrapped: the WSGI callable to pass authenticated requests to.
    :param store: ``store()`` returns the kubevirt driver's session
        :class:`~sushy_kubevirt.accounts.sessionstore.Store`, else None.
    :param accounts: ``accounts()`` returns its
        :class:`~sushy_kubevirt.accounts.accountsfile.AccountsFile`, else
        None (every user of the auth file has an account).
    """

    def __init__(self, app, wrapped, store,  # noqa: the parent's is unfit
                 accounts=lambda: None):
        self.flask_app = app
        self.wrapped = wrapped
        self._store = store
        self._accounts = accounts
        self._stock = {}

    def _stock_middleware(self, auth_file):
        if auth_file not in self._stock:
            self._stock[auth_file] = main.RedfishAuthMiddleware(
                self.wrapped, auth_file)
        return self._stock[auth_file]

    def __call__(self, environ, start_response):
        environ.pop(USER_KEY, None)
        environ.pop(ACCOUNT_KEY, None)
        auth_file = self.flask_app.config.get(AUTH_FILE)
        kube = self.flask_app.config.get(config.ACCOUNTS_SOURCE_KEY) in (
            config.KUBERNETES, config.SECRETS)
        if not auth_file and not kube:
            return self.wrapped(environ, start_response)
        store = self._store()
        if store is None:
            if not auth_file:
                return self.wrapped(environ, start_response)
            return self._stock_middleware(auth_file)(environ, start_response)
        path = environ.get('PATH_INFO', '').strip('/')
        method = environ.get('REQUEST_METHOD', 'GET')
        if path in OPEN or (path in LOGIN and method == 'POST'):
            return self.wrapped(environ, start_response)
        who = presented(environ)
        guard = attempts.guard(store, environ)
        refusal = self._authenticate(environ, auth_file, store, guard)
        if refusal is None:
            return self.wrapped(environ, start_response)
        if refusal.status_code == 401 and who:
            securitylog.note(store.cluster, store.namespace, 'LoginFailed',
                             'Refused %s from %s' % (
                                 who, guard.client or 'unknown'),
                             guard.account, guard.client)
        return refusal(environ, start_response)

    def _authenticate(self, environ, auth_file, store, guard):
        token = environ.get('HTTP_X_AUTH_TOKEN')
        header = environ.pop('HTTP_AUTHORIZATION', None)
        try:
            accounts = self._accounts()
            if token:
                session = store.authenticate(token)
                if session is None:
                    LOG.info('Refused a request with an unknown or expired '
                             'session token')
                    return _refusal('The session token is not valid; log '
                                    'in again')
                if isinstance(accounts, kubeaccounts.KubeAccounts):
                    environ[ACCOUNT_KEY] = accounts.account(session.user,
                                                            session.groups)
                environ['HTTP_X_USER'] = environ[USER_KEY] = session.user
                return None
            if header is None:
                return _refusal('Authentication required: HTTP Basic or '
                                'an X-Auth-Token of a session')
            credentials = basic_credentials(header)
            if credentials is None:
                LOG.info('Refused a malformed Authorization header')
                return _refusal('The Authorization header is not valid '
                                'HTTP Basic credentials')
            user, password = credentials
            if isinstance(accounts, kubeaccounts.KubeAccounts):
                account = bearer(accounts, password, guard)
                if account is None:
                    LOG.info('Refused a bearer token the API server does '
                             'not know')
                    return _refusal('Incorrect user name or password')
                environ[ACCOUNT_KEY] = account
                environ['HTTP_X_USER'] = environ[USER_KEY] = account.name
                return None
            if not check(auth_file, accounts, user, password, guard):
                LOG.info('Refused the credentials of user %r', user)
                return _refusal('Incorrect user name or password')
            if not has_account(accounts, user):
                LOG.info('Refused user %r: the accounts file gives them '
                         'no role', user)
                return _refusal('User %s has no role here' % user)
        except attempts.Throttled as exc:
            LOG.info('Refused a check of credentials from %s: too many '
                     'failed', guard.client)
            return _refusal('Too many failed authentications; retry in %d '
                            'seconds' % exc.wait, code=429,
                            message_id='ServiceTemporarilyUnavailable',
                            args=(exc.wait,),
                            headers={'Retry-After': str(exc.wait)})
        except accountsfile.AccountsError as exc:
            LOG.error('Refusing requests: %s', exc)
            return _refusal('The accounts file cannot be read', code=503,
                            message_id='ServiceTemporarilyUnavailable',
                            args=(5,), headers={'Retry-After': '5'})
        except apierrors.ApiError as exc:
            LOG.warning('Cannot check credentials now (sessions, lockout '
                        'or token review): %s', type(exc).__name__)
            return _refusal('Credentials cannot be checked now', code=503,
                            message_id='ServiceTemporarilyUnavailable',
                            args=(1,), headers={'Retry-After': '1'})
        environ['HTTP_X_USER'] = environ[USER_KEY] = user
        return None


def presented(environ):
    """Whose credentials a request presents, for the security log.

    None without any (a client probing is not a refused login).
    """
    if environ.get('HTTP_X_AUTH_TOKEN'):
        return 'a session token'
    header = environ.get('HTTP_AUTHORIZATION')
    if header is None:
        return None
    credentials = basic_credentials(header)
    if credentials is None:
        return 'a malformed Authorization header'
    return 'the credentials of user %r' % credentials[0][:64]


def check(auth_file, accounts, user, password, guard=None):
    """Whether ``user``/``password`` (bytes) are valid.

    Of the account Secrets, else of the htpasswd file (:func:`verify`;
    True without one).

    :raises attempts.Throttled: the client's budget of checks is spent.
    """
    if isinstance(accounts, secretaccounts.SecretAccounts):
        return accounts.verify(user, password, guard)
    return not auth_file or verify(auth_file, user, password, guard)


def has_account(accounts, user):
    """Whether ``user`` may log in: named by the accounts file, if any.

    :raises accountsfile.AccountsError: the file cannot be read.
    """
    return accounts is None or accounts.account(user) is not None


def bearer(accounts, password, guard=None):
    """The KubeAccount whose bearer token ``password`` (bytes) is, else None.

    A token the API server has not vouched for lately is a check that
    ``guard`` throttles.

    :raises apierrors.ApiError: the API server could not say.
    :raises attempts.Throttled: the client's budget of checks is spent.
    """
    try:
        token = password.decode('ascii')
    except UnicodeDecodeError:
        return None
    if not token or len(token) > MAX_TOKEN:
        return None
    if guard is None or accounts.known(token):
        return accounts.authenticate(token)
    guard.admit(None)
    account = accounts.authenticate(token)
    guard.settle(None, account is not None, True)
    return account


def wrap(app, store, accounts, inner):
    """Put :class:`Middleware` around ``app``'s WSGI callable (once).

    ``inner(wsgi)`` wraps Flask's own callable first: what the requests
    that pass authentication reach.
    """
    current = app.wsgi_app
    if isinstance(current, Middleware):
        return
    if isinstance(current, main.RedfishAuthMiddleware):
        current = current.app   # sushy-tools' own, made by configure()
    app.wsgi_app = Middleware(app, inner(current), store, accounts)
