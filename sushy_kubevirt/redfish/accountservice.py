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

Read-only. The roles are the predefined ones
(:data:`sushy_kubevirt.accounts.privileges.ROLES`). The accounts are
those of the accounts file (:mod:`sushy_kubevirt.accounts.accountsfile`)
or, without one, every user of the htpasswd file as an Administrator; a
user sees only their own account unless their role may configure users.
The lockout itself is kept in Kubernetes
(:mod:`sushy_kubevirt.accounts.lockout`), shared by every worker.
"""

import urllib.parse

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import tenancy
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import oem
from sushy_kubevirt.redfish import root
from sushy_kubevirt.redfish import sessions

ROLES = root.ACCOUNT_SERVICE + '/Roles'
ACCOUNTS = root.ACCOUNT_SERVICE + '/Accounts'


def resource(policy):
    """The AccountService: the lockout policy, links to roles, accounts."""
    return {
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


def account(acct):
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
    current = tenancy.current()
    return current is None or current.allows(
        privileges.CONFIGURE_USERS) or current.name == acct.name


@base.route(root.ACCOUNT_SERVICE, GET=privileges.LOGIN)
def account_service():
    store = sessions.sessions_of(flask.current_app)
    return flask.jsonify(resource(store.policy.lockout_policy))


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


@base.route(ACCOUNTS, GET=privileges.LOGIN)
def account_collection():
    members = [_account_uri(a.name) for a in _accounts(flask.current_app)
               if _visible(a)]
    return flask.jsonify(collection(
        '#ManagerAccountCollection.ManagerAccountCollection', ACCOUNTS,
        'Accounts', members))


@base.route(ACCOUNTS + '/<account_id>', GET=privileges.LOGIN)
def account_resource(account_id):
    for acct in _accounts(flask.current_app):
        if acct.name == account_id and _visible(acct):
            return flask.jsonify(account(acct))
    raise error.NotFound('Account %s not found' % account_id)
