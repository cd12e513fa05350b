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

"""The AccountService: the lockout policy, the roles and the accounts.

The roles are the predefined ones
(:data:`sushy_kubevirt.accounts.privileges.ROLES`). The accounts are
those of the accounts file (:mod:`sushy_kubevirt.accounts.accountsfile`),
of the account Secrets (:mod:`sushy_kubevirt.accounts.secretaccounts`)
or, without either, every user of the htpasswd file as an Administrator;
a user sees only their own account unless their role may configure
users. Every account's GET has an ``ETag``: an account Secret's
resourceVersion, else a digest of the account. Only the account Secrets
can be created, changed (guarded by the Secret's resourceVersion;
``If-Match`` its ETag) and deleted here, with ConfigureUsers;
ConfigureSelf changes one's own Password. Elsewhere those methods are
a 405. The lockout itself is kept in Kubernetes
(:mod:`sushy_kubevirt.accounts.lockout`), shared by every worker.
"""

import hashlib
import json
import urllib.parse

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import secretaccounts
from sushy_kubevirt import config
from sushy_kubevirt.drivers import context
from sushy_kubevirt import errormap
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import oem
from sushy_kubevirt.redfish import root
from sushy_kubevirt.redfish import sessions

ROLES = root.ACCOUNT_SERVICE + '/Roles'
ACCOUNTS = root.ACCOUNT_SERVICE + '/Accounts'
READ_ONLY = {'Allow': 'GET, HEAD'}
OEM_KEYS = ('Namespaces', 'LabelSelector')


def resource(policy, writable=False):
    """The AccountService: the lockout policy, links to roles, accounts.

    ``writable``: accounts can be created here (password limits shown).
    """
    body = {
        '@odata.type': '#AccountService.v1_5_0.AccountService',
        '@odata.id': root.ACCOUNT_SERVICE,
        'Id': 'AccountService',
        'Name': 'Account Service',
        'ServiceEnabled': True,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'AccountLockoutThreshold': policy.threshold,
        'AccountLockoutDuration': policy.duration,
        'AccountLockoutCounterResetAfter': policy.reset_after,
        'AccountLockoutCounterResetEnabled': True,
        'Roles': {'@odata.id': ROLES},
        'Accounts': {'@odata.id': ACCOUNTS},
    }
    if writable:
        body['MinPasswordLength'] = secretaccounts.MIN_PASSWORD
        body['MaxPasswordLength'] = secretaccounts.MAX_PASSWORD
    return body


def role(role_id):
    """A predefined Role."""
    return {
        '@odata.type': '#Role.v1_3_1.Role',
        '@odata.id': '%s/%s' % (ROLES, role_id),
        'Id': role_id,
        'Name': '%s role' % role_id,
        'RoleId': role_id,
        'IsPredefined': True,
        'AssignedPrivileges': list(privileges.ROLES[role_id]),
        'OemPrivileges': [],
    }


def _account_uri(name):
    return '%s/%s' % (ACCOUNTS, urllib.parse.quote(name, safe=''))


def account(acct, writable=False):
    """A ManagerAccount; ``Oem`` says what it reaches."""
    body = {
        '@odata.type': '#ManagerAccount.v1_7_0.ManagerAccount',
        '@odata.id': _account_uri(acct.name),
        'Id': acct.name,
        'Name': 'User account %s' % acct.name,
        'UserName': acct.name,
        'RoleId': acct.role,
        'Enabled': True,
        'Locked': False,
        'Password': None,
        'AccountTypes': ['Redfish'],
        'Links': {'Role': {'@odata.id': '%s/%s' % (ROLES, acct.role)}},
        'Oem': {oem.VENDOR: {
            'Namespaces': None if acct.namespaces is None
            else sorted(acct.namespaces),
            'LabelSelector': acct.selector}},
    }
    if writable:
        body['RoleId@Redfish.AllowableValues'] = list(privileges.ROLES)
    oem.typed(body, 'ManagerAccount')
    return body


def collection(odata_type, uri, name, members):
    return {
        '@odata.type': odata_type,
        '@odata.id': uri,
        'Name': name,
        'Members@odata.count': len(members),
        'Members': [{'@odata.id': member} for member in members],
    }


def _accounts(app):
    """Every account the service knows of, by name."""
    accounts = access.accounts_of(app)
    if accounts is not None:
        try:
            return accounts.accounts()
        except accountsfile.AccountsError:
            return []   # refused already by access.authorize
    auth_file = app.config.get(auth.AUTH_FILE)
    names = sorted(auth.users(auth_file)) if auth_file else []
    return [accountsfile.administrator(name) for name in names]


def _visible(acct):
    return _may_configure_users() or \
        context.current().account.name == acct.name


def _writable(app):
    """The account Secrets, else None."""
    accounts = access.accounts_of(app)
    return accounts if isinstance(
        accounts, secretaccounts.SecretAccounts) else None


def _store(app):
    """The account Secrets, else a 405: the other sources are read-only."""
    store = _writable(app)
    if store is None:
        raise messages.RedfishError(
            'OperationNotAllowed', code=405, headers=READ_ONLY,
            detail='Accounts are read-only here; they can be changed with '
            '%s = %r' % (config.ACCOUNTS_SOURCE_KEY, config.SECRETS))
    return store


def _may_configure_users():
    current = context.current().account
    return current is None or current.allows(privileges.CONFIGURE_USERS)


def _refuse(what):
    current = context.current().account
    raise messages.RedfishError(
        'InsufficientPrivilege', code=403,
        detail='%s (%s) may not %s: it needs the ConfigureUsers privilege'
        % (current.name, current.role, what))


def _bad(message_id, *args, prop, detail=None):
    return messages.RedfishError(message_id, *args, properties=['/' + prop],
                                 detail=detail)


def _string(body, name, shown=None):
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise _bad('PropertyValueTypeError', shown or value, name,
                   prop=name)
    return value


def _password(body):
    """The Password of ``body`` (None when absent), checked."""
    value = _string(body, 'Password', '(hidden)')
    if value is None:
        return None
    size = len(value.encode('utf-8', 'surrogatepass'))
    if size > secretaccounts.MAX_PASSWORD:
        raise _bad('StringValueTooLong', 'Password',
                   secretaccounts.MAX_PASSWORD, prop='Password',
                   detail='A Password is at most %d bytes (bcrypt)'
                   % secretaccounts.MAX_PASSWORD)
    if len(value) < secretaccounts.MIN_PASSWORD:
        raise _bad('PropertyValueFormatError', '(hidden)', 'Password',
                   prop='Password', detail='A Password is at least %d '
                   'characters' % secretaccounts.MIN_PASSWORD)
    return value


def _reach(body, acct):
    """``acct`` with the namespaces and selector of ``body['Oem']``."""
    if 'Oem' not in body:
        return acct
    prefix = 'Oem/%s/' % oem.VENDOR
    block = body['Oem']
    if not isinstance(block, dict):
        raise _bad('PropertyValueTypeError', block, 'Oem', prop='Oem')
    base.unknown(block, (oem.VENDOR,), 'Oem/')
    block = block.get(oem.VENDOR)
    if not isinstance(block, dict):
        raise _bad('PropertyValueTypeError', block, 'Oem/' + oem.VENDOR,
                   prop='Oem/' + oem.VENDOR)
    block = {k: v for k, v in block.items() if k != '@odata.type'}
    base.unknown(block, OEM_KEYS, prefix)
    entry = {'role': acct.role,
             'namespaces': None if acct.namespaces is None
             else sorted(acct.namespaces), 'selector': acct.selector}
    namespaces = block.get('Namespaces', entry['namespaces'])
    if namespaces is not None and (not isinstance(namespaces, list) or not (
            namespaces and all(isinstance(n, str) and n and ',' not in n
                               for n in namespaces))):
        raise _bad('PropertyValueFormatError', namespaces,
                   prefix + 'Namespaces', prop=prefix + 'Namespaces',
                   detail='Namespaces is null (every namespace) or a '
                   'non-empty list of namespace names')
    entry['namespaces'] = namespaces
    entry['selector'] = _string(block, 'LabelSelector') \
        if 'LabelSelector' in block else entry['selector']
    try:
        return accountsfile.make_account(acct.name, entry, 'Oem')
    except accountsfile.AccountsError as exc:
        raise _bad('PropertyValueFormatError', entry['selector'],
                   prefix + 'LabelSelector', prop=prefix + 'LabelSelector',
                   detail=str(exc)) from None


def _role(body, current):
    value = _string(body, 'RoleId')
    if value is None:
        return current
    base.choice('RoleId', value, tuple(privileges.ROLES))
    return value


def _etag(secret):
    return '"%s"' % secret['metadata']['resourceVersion']


def _version(secret):
    """The version If-Match holds this write to; 412 when stale."""
    request = flask.request
    if 'If-Match' not in request.headers or request.if_match.star_tag:
        return None
    if not request.if_match.contains(secret['metadata']['resourceVersion']):
        raise messages.RedfishError(
            'PreconditionFailed', code=412, headers={'ETag': _etag(secret)},
            detail='If-Match %s does not name the current ETag %s of this '
            'account; nothing was changed' % (request.headers['If-Match'],
                                              _etag(secret)))
    return secret['metadata']['resourceVersion']


def _read_only(body):
    """An account of the file or htpasswd: its ETag digests the body."""
    response = flask.jsonify(body)
    response.headers['ETag'] = '"%s"' % hashlib.sha256(json.dumps(
        body, sort_keys=True).encode()).hexdigest()[:32]
    return response


def _changed(secret, status=200, headers=None):
    acct = secretaccounts.parse(secret)[0]
    response = base.json_response(account(acct, True), status, headers)
    response.headers['ETag'] = _etag(secret)
    return response


def _create(store):
    if not _may_configure_users():
        _refuse('create accounts')
    body = base.json_body()
    base.unknown(body, ('UserName', 'Password', 'RoleId', 'Oem'))
    for name in ('UserName', 'Password', 'RoleId'):
        if body.get(name) is None:
            raise _bad('PropertyMissing', name, prop=name)
    user = _string(body, 'UserName')
    if not secretaccounts.USER_NAME.match(user):
        raise _bad('PropertyValueFormatError', user, 'UserName',
                   prop='UserName', detail='A UserName is 1 to 48 lower '
                   'case letters, digits and inner hyphens')
    password = _password(body)
    acct = _reach(body, accountsfile.Account(user, _role(body, None)))
    try:
        made = store.create(acct, password)
    except apierrors.Conflict:
        raise messages.RedfishError(
            'ResourceAlreadyExists', 'ManagerAccount', 'UserName', user,
            code=409, properties=['/UserName']) from None
    flask.current_app.logger.info('Account %r created (%s)', user,
                                  acct.role)
    return _changed(made, 201, {'Location': _account_uri(user)})


def _patch(store, account_id, secret):
    """PATCH an account; its OData annotations (``@odata.id``) ignored."""
    body = base.json_body()
    annotations = [k for k in body if k.startswith('@')]
    if annotations and len(annotations) == len(body):
        raise messages.RedfishError(
            'NoOperation', detail='The PATCH has only OData annotations (%s)'
            '; nothing was changed' % ', '.join(sorted(annotations)))
    body = {k: v for k, v in body.items() if k not in annotations}
    base.unknown(body, ('Password', 'RoleId', 'Oem'))
    if not _may_configure_users() and set(body) - {'Password'}:
        _refuse('change more than its own Password')
    password = _password(body)
    role_id = _role(body, '')
    checked = _reach(body, secretaccounts.parse(secret)[0])

    def change(acct):
        return accountsfile.Account(
            acct.name, role_id or acct.role,
            checked.namespaces if 'Oem' in body else acct.namespaces,
            checked.selector if 'Oem' in body else acct.selector), password
    try:
        made = store.update(account_id, change, _version(secret))
    except apierrors.Conflict:
        raise messages.RedfishError(
            'PreconditionFailed', code=412, detail='The account changed '
            'since the ETag of If-Match; nothing was changed') from None
    flask.current_app.logger.info('Account %r changed (%s)', account_id,
                                  ', '.join(sorted(body)))
    return _changed(made)


def _delete(store, account_id, secret):
    try:
        store.delete(account_id, _version(secret))
    except apierrors.Conflict:
        raise messages.RedfishError(
            'PreconditionFailed', code=412, detail='The account changed '
            'since it was read; nothing was deleted') from None
    app = flask.current_app
    sessions_store = sessions.session_store(app)
    for session in sessions_store.list(account_id) if sessions_store else ():
        sessions_store.delete(session.id)
    app.logger.info('Account %r deleted', account_id)
    return flask.Response(status=204)


@base.route(root.ACCOUNT_SERVICE, GET=privileges.LOGIN)
def account_service():
    app = flask.current_app
    store = sessions.sessions_of(app)
    return flask.jsonify(resource(store.policy.lockout_policy,
                                  _writable(app) is not None))


@base.route(ROLES, GET=privileges.LOGIN)
def role_collection():
    return flask.jsonify(collection(
        '#RoleCollection.RoleCollection', ROLES, 'Roles',
        ['%s/%s' % (ROLES, r) for r in privileges.ROLES]))


@base.route(ROLES + '/<role_id>', GET=privileges.LOGIN)
def role_resource(role_id):
    if role_id not in privileges.ROLES:
        raise error.NotFound('Role %s not found' % role_id)
    return flask.jsonify(role(role_id))


@base.route(ACCOUNTS, GET=privileges.LOGIN, POST=privileges.CONFIGURE_USERS)
@errormap.translate
def account_collection():
    """GET: the accounts; POST: create one (account Secrets only)."""
    app = flask.current_app
    if flask.request.method == 'POST':
        return _create(_store(app))
    members = [_account_uri(a.name) for a in _accounts(app) if _visible(a)]
    return flask.jsonify(collection(
        '#ManagerAccountCollection.ManagerAccountCollection', ACCOUNTS,
        'Accounts', members))


@base.route(ACCOUNTS + '/<account_id>', GET=privileges.LOGIN,
            PATCH=privileges.CONFIGURE_SELF,
            DELETE=privileges.CONFIGURE_USERS)
@errormap.translate
def account_resource(account_id):
    """GET an account; PATCH or DELETE it (account Secrets only).

    PATCH needs ConfigureSelf: its handler lets one without
    ConfigureUsers change only their own Password.
    """
    app = flask.current_app
    method = flask.request.method
    if method != 'GET':
        store = _store(app)
        if not _may_configure_users() and (
                method == 'DELETE' or
                context.current().account.name != account_id):
            _refuse('change or delete the accounts of others')
        secret = store.secret(account_id)
        acct = secret and store.account(account_id)
        if acct is None or not _visible(acct):
            raise error.NotFound('Account %s not found' % account_id)
        if method == 'PATCH':
            return _patch(store, account_id, secret)
        return _delete(store, account_id, secret)
    store = _writable(app)
    if store is not None:
        secret = store.secret(account_id)
        acct = secret and store.account(account_id)
        if acct is not None and _visible(acct):
            return _changed(secret)
    else:
        for acct in _accounts(app):
            if acct.name == account_id and _visible(acct):
                return _read_only(account(acct))
    raise error.NotFound('Account %s not found' % account_id)
