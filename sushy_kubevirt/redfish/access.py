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

"""Each request's account: its privileges and its reach (DSP0266 13.2).

With a plugin systems driver and authentication on, :func:`authorize`
runs before every other handler. It finds the account of the user the
authentication middleware (:mod:`.auth`) named, in the accounts file
when one is set (every user is an Administrator otherwise), makes it
the request's account (:mod:`sushy_kubevirt.accounts.tenancy`: the
drivers then neither list nor find VMs outside its namespaces), and
refuses with a 403 ``InsufficientPrivilege``, before anything is read
or changed, a method whose declared privilege the account's role lacks.
A route on what a user owns (a session, a subscription) lets its
handler decide who else may see it.
"""

import flask

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import tenancy
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base

#: What a method no route declares needs: reading, or the most.
DEFAULT = {'GET': privileges.LOGIN, 'HEAD': privileges.LOGIN,
           'OPTIONS': privileges.LOGIN}


def accounts_of(app):
    """The systems driver's accounts file, else None."""
    systems = base.systems_driver(app, 'accounts')
    return systems.accounts() if systems is not None else None


def account_of(app, user):
    """``user``'s Account, or None when the accounts file does not name it.

    :raises messages.RedfishError: 503 when the file cannot be read.
    """
    accounts = accounts_of(app)
    if accounts is None:
        return accountsfile.administrator(user)
    try:
        return accounts.get(user)
    except accountsfile.AccountsError as exc:
        app.logger.error('Refusing requests: %s', exc)
        raise messages.RedfishError(
            'ServiceTemporarilyUnavailable', 5, code=503,
            detail='The accounts file cannot be read',
            headers={'Retry-After': '5'}) from None


def needed(needs, endpoint, method):
    """The privilege ``method`` of ``endpoint`` needs."""
    declared = needs.get((endpoint, 'GET' if method == 'HEAD' else method))
    return declared or DEFAULT.get(method, privileges.CONFIGURE_MANAGER)


def may_manage_others():
    """Whether this request may see others' subscriptions."""
    account = tenancy.current()
    return account is None or account.allows(
        privileges.CONFIGURE_USERS) or account.allows(
        privileges.CONFIGURE_MANAGER)


def authorize(app, needs):
    """Set this request's account; a 403 unless its role may do this.

    :param needs: ``{(endpoint, method): privilege}`` of every route.
    """
    user = flask.request.environ.get(auth.USER_KEY)
    if user is None or not base.plugin_driver(app):
        tenancy.set_current(None)   # no authentication: as sushy-tools
        return
    account = account_of(app, user)
    if account is None:   # removed from the file since it logged in
        raise messages.RedfishError(
            'NoValidSession', code=401, detail='User %r has no account' %
            user, headers={'WWW-Authenticate': auth.CHALLENGE})
    tenancy.set_current(account)
    privilege = needed(needs, flask.request.endpoint, flask.request.method)
    if not account.allows(privilege):
        app.logger.info('Refused %s %s to %r (%s): needs %s',
                        flask.request.method, flask.request.path, user,
                        account.role, privilege)
        raise messages.RedfishError(
            'InsufficientPrivilege', code=403,
            detail='Role %s of %s lacks the %s privilege this needs'
            % (account.role, user, privilege))
