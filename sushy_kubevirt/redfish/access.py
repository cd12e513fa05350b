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
the request's account (:class:`sushy_kubevirt.drivers.context.Request`: the
drivers then neither list nor find VMs outside its namespaces), and
refuses with a 403 ``InsufficientPrivilege``, before anything is read
or changed, a method whose declared privilege the account's role lacks.
A route on what a user owns (a session, a subscription) lets its
handler decide who else may see it.

When the cluster's RBAC decides (a
:class:`~sushy_kubevirt.accounts.kubeaccounts.KubeAccount`, made by the
middleware), Login and ConfigureSelf are every identity's; a request on
a System needs what ``kubevirt.permissions.needs`` says of it, on its
VirtualMachine (a System the identity cannot reach is a 404 there, as
above); any other request that needs more than Login needs its
non-resource URL with its HTTP verb (``nonResourceURLs`` in a
ClusterRole).
"""

import re

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import clients
from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import securitylog
from sushy_kubevirt.drivers import context
from sushy_kubevirt.kubevirt import permissions
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base

#: Rules whose ``<identity>`` is a System's (a Manager's is its System's).
SCOPED = re.compile(r'^/redfish/v1/(Systems|Managers)/<identity>')
#: What a method no route declares needs: reading, or the most.
DEFAULT = {'GET': privileges.LOGIN, 'HEAD': privileges.LOGIN,
           'OPTIONS': privileges.LOGIN}


def accounts_of(app):
    """The systems driver's accounts (a file, the cluster's), else None."""
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
        return accounts.account(user)
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
    account = context.current().account
    return account is None or account.allows(
        privileges.CONFIGURE_USERS) or account.allows(
        privileges.CONFIGURE_MANAGER)


def _refuse(app, account, what):
    request = flask.request
    app.logger.info('Refused %s %s to %r (%s): needs %s', request.method,
                    request.path, account.name, account.role, what)
    systems = base.systems_driver(app, 'sessions')
    store = systems.sessions() if systems is not None else None
    if store is not None:
        client = clients.real(request.environ,
                              store.policy.trusted_proxies)
        securitylog.note(store.cluster, store.namespace, 'PrivilegeRefused',
                         'Refused %s %s to %s (%s) from %s: needs %s' % (
                             request.method, request.path, account.name,
                             account.role, client or 'unknown', what),
                         account.name, client)
    raise messages.RedfishError(
        'InsufficientPrivilege', code=403,
        detail='%s (%s) may not do this: it needs %s'
        % (account.name, account.role, what))


def _system(app):
    """``(namespace, name)`` of the System under the request.

    :returns: None for a request under no System; ``()`` for a System
        the account cannot reach or that does not exist (or an alias),
        which the view answers as it would anyone.
    """
    request = flask.request
    rule = request.url_rule.rule if request.url_rule else ''
    systems = base.systems_driver(app, 'find_vm')
    if not SCOPED.match(rule) or systems is None:
        return None
    try:
        vm = systems.find_vm(request.view_args['identity'])
    except (error.NotFound, error.AliasAccessError):
        return ()
    return vm['metadata']['namespace'], vm['metadata']['name']


def _kube_authorize(app, account, privilege):
    """Ask the cluster's RBAC what this request needs (module docstring)."""
    request = flask.request
    system = _system(app)
    if system:
        for attributes in permissions.needs(
                request.method, request.url_rule.rule,
                request.get_json(silent=True), *system):
            if not account.may(attributes):
                _refuse(app, account, '{verb} {resource}{sub} in {ns}'.format(
                    verb=attributes['verb'], resource=attributes['resource'],
                    sub='/' + attributes['subresource']
                    if 'subresource' in attributes else '',
                    ns=attributes['namespace']))
    elif system is None and not account.allows(privilege) and \
            not account.may(path=request.path, verb=request.method.lower()):
        _refuse(app, account, '%s on the non-resource URL %s'
                % (request.method.lower(), request.path))


def request_account(app, environ):
    """The account of the request ``environ`` authenticated.

    None when nothing is restricted (no authentication: as sushy-tools).

    :raises messages.RedfishError: 401 when the user has no account any
        more (removed from the file since they logged in), 503 when the
        accounts cannot be read.
    """
    user = environ.get(auth.USER_KEY)
    if user is None or not base.plugin_driver(app):
        return None
    account = environ.get(auth.ACCOUNT_KEY) or account_of(app, user)
    if account is None:
        raise messages.RedfishError(
            'NoValidSession', code=401, detail='User %r has no account' %
            user, headers={'WWW-Authenticate': auth.CHALLENGE})
    return account


def authorize(app, needs):
    """Set this request's account; a 403 unless it may do this.

    :param needs: ``{(endpoint, method): privilege}`` of every route.
    """
    account = request_account(app, flask.request.environ)
    context.current().account = account
    if account is None:
        return
    privilege = needed(needs, flask.request.endpoint, flask.request.method)
    if isinstance(account, kubeaccounts.KubeAccount):
        _kube_authorize(app, account, privilege)
    elif not account.allows(privilege):
        _refuse(app, account, 'the %s privilege' % privilege)
