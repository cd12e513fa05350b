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

"""The SessionService and its Sessions: log in, list, log out.

The sessions themselves are Secrets (:mod:`sushy_kubevirt.accounts.
sessionstore`), so every worker and replica sees a login at once and a
logout as soon as its watch delivers it. A POST to the collection or to
its ``Members`` logs in; its password check is guarded as a request's
(:mod:`sushy_kubevirt.accounts.attempts`: the throttle and the lockout of
its client). A user sees and deletes only
their own sessions: another user's is a 404, as one that does not
exist, whatever the role.

A PATCH of the SessionService (ConfigureManager, as the Redfish privilege
registry says) sets its ``SessionTimeout`` (30..86400 s) for every
worker and replica; no other property can be written. Its GET has an
ETag (a digest of the body), which an ``If-Match`` may name.
"""

import hashlib
import json
import time

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import attempts
from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import securitylog
from sushy_kubevirt.accounts import sessiontimeout
from sushy_kubevirt import errormap
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import root


def session_store(app):
    """The plugin driver's session store, else None."""
    systems = base.systems_driver(app, 'sessions')
    return systems.sessions() if systems is not None else None


def sessions_of(app):
    """The session store; a 404 when the driver offers none."""
    store = session_store(app)
    if store is None:
        raise error.NotFound('No sessions: the configured systems driver '
                             'offers none')
    return store


def service(timeout, members_uri):
    """The SessionService resource."""
    return {
        '@odata.type': '#SessionService.v1_1_8.SessionService',
        '@odata.id': '/redfish/v1/SessionService',
        'Id': 'SessionService',
        'Name': 'Session Service',
        'ServiceEnabled': True,
        'SessionTimeout': timeout,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'Sessions': {'@odata.id': members_uri},
    }


def collection(sessions, members_uri):
    return {
        '@odata.type': '#SessionCollection.SessionCollection',
        '@odata.id': members_uri,
        'Name': 'Session Collection',
        'Members@odata.count': len(sessions),
        'Members': [{'@odata.id': '%s/%s' % (members_uri, s.id)}
                    for s in sessions],
    }


def resource(session, members_uri):
    return {
        '@odata.type': '#Session.v1_4_0.Session',
        '@odata.id': '%s/%s' % (members_uri, session.id),
        'Id': session.id,
        'Name': 'User Session',
        'UserName': session.user,
        'CreatedTime': time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                     time.gmtime(session.created)),
        'SessionType': 'Redfish',
    }


def _etag(body):
    return '"%s"' % hashlib.sha256(json.dumps(
        body, sort_keys=True).encode()).hexdigest()[:24]


def _new_timeout(body):
    """The SessionTimeout of a PATCH body, checked (400 otherwise)."""
    body = {k: v for k, v in body.items() if not k.startswith('@')}
    for name in sorted(set(body) - {'SessionTimeout'}):
        known = name in service(0, root.SESSIONS)
        raise messages.RedfishError(
            'PropertyNotWritable' if known else 'PropertyUnknown', name,
            properties=['/' + name], detail='Only SessionTimeout can be '
            'changed here; nothing was changed')
    if 'SessionTimeout' not in body:
        raise messages.RedfishError(
            'NoOperation', detail='The PATCH changes no property; nothing '
            'was changed')
    value = body['SessionTimeout']
    if isinstance(value, bool) or not isinstance(value, int):
        raise messages.RedfishError(
            'PropertyValueTypeError', json.dumps(value), 'SessionTimeout',
            properties=['/SessionTimeout'],
            detail='SessionTimeout must be a whole number of seconds')
    if not sessiontimeout.MIN_TIMEOUT <= value <= sessiontimeout.MAX_TIMEOUT:
        raise messages.RedfishError(
            'PropertyValueOutOfRange', value, 'SessionTimeout',
            properties=['/SessionTimeout'],
            detail='SessionTimeout must be from %d to %d seconds'
            % (sessiontimeout.MIN_TIMEOUT, sessiontimeout.MAX_TIMEOUT))
    return value


def _if_match(timeout):
    """412 unless the request's If-Match (if any) names ``timeout``'s ETag."""
    request = flask.request
    if 'If-Match' not in request.headers or request.if_match.star_tag:
        return
    current = _etag(service(timeout, root.SESSIONS))
    if not request.if_match.contains(current.strip('"')):
        raise messages.RedfishError(
            'PreconditionFailed', code=412, headers={'ETag': current},
            detail='If-Match %s does not name the current ETag %s of the '
            'SessionService; nothing was changed'
            % (request.headers['If-Match'], current))


@base.route(root.SESSION_SERVICE, GET=privileges.LOGIN,
            PATCH=privileges.CONFIGURE_MANAGER)
@errormap.translate
def session_service():
    """GET: the SessionService; PATCH: set its SessionTimeout."""
    store = sessions_of(flask.current_app)
    timeout = store.timeout
    if flask.request.method == 'PATCH':
        timeout = _new_timeout(base.json_body())
        store.timeouts.set(timeout, check=_if_match)
        flask.current_app.logger.info('SessionTimeout set to %d s by %r',
                                      timeout, _requester())
    body = service(timeout, root.SESSIONS)
    response = flask.jsonify(body)
    response.headers['ETag'] = _etag(body)
    return response


def _refused(store, guard, detail, user):
    securitylog.note(store.cluster, store.namespace, 'LoginFailed',
                     'Login refused for user %r from %s: %s' % (
                         str(user)[:64], guard.client or 'unknown', detail),
                     guard.account, guard.client)
    return messages.RedfishError('NoValidSession', code=401, detail=detail,
                                 headers={'WWW-Authenticate': auth.CHALLENGE})


def _login(store):
    guard = attempts.guard(store, flask.request.environ)
    try:
        return _checked_login(store, guard)
    except attempts.Throttled as exc:
        flask.current_app.logger.info('Login refused for a client: too '
                                      'many failed authentications')
        raise messages.RedfishError(
            'ServiceTemporarilyUnavailable', exc.wait, code=429,
            detail='Too many failed authentications; retry in %d seconds'
            % exc.wait, headers={'Retry-After': str(exc.wait)}) from None


def _checked_login(store, guard):
    app = flask.current_app
    body = base.json_body()
    user, password = body.get('UserName'), body.get('Password')
    for name, value in (('UserName', user), ('Password', password)):
        if value is None:
            raise messages.RedfishError('PropertyMissing', name,
                                        properties=['/' + name])
        if not isinstance(value, str):
            raise messages.RedfishError(
                'PropertyValueTypeError', '(hidden)' if name == 'Password'
                else value, name, properties=['/' + name])
    auth_file = app.config.get(auth.AUTH_FILE)
    accounts = access.accounts_of(app)
    secret = password.encode('utf-8', 'surrogatepass')
    groups = ()
    if isinstance(accounts, kubeaccounts.KubeAccounts):
        account = auth.bearer(accounts, secret, guard)
        if account is None:
            app.logger.info('Login refused: not a valid bearer token')
            raise _refused(store, guard, 'Incorrect user name or password',
                           user)
        user, groups = account.name, account.groups
    elif not auth.check(auth_file, accounts, user, secret, guard):
        app.logger.info('Login refused for user %r', user)
        raise _refused(store, guard, 'Incorrect user name or password',
                       user)
    elif auth_file and access.account_of(app, user) is None:
        app.logger.info('Login refused for user %r: no role', user)
        raise _refused(store, guard, 'User %s has no role here' % user,
                       user)
    session, token = store.create(user, groups)
    app.logger.info('Session %s created for user %r', session.id, user)
    securitylog.note(store.cluster, store.namespace, 'SessionCreated',
                     'User %r logged in from %s (session %s)' % (
                         user, guard.client or 'unknown', session.id),
                     user, guard.client)
    location = '%s/%s' % (root.SESSIONS, session.id)
    response = flask.jsonify(resource(session, root.SESSIONS))
    response.status_code = 201
    response.headers['Location'] = location
    response.headers['X-Auth-Token'] = token
    return response


def _requester():
    """The authenticated user of the request; None without an auth file."""
    return flask.request.environ.get(auth.USER_KEY)


@base.route(root.SESSIONS, GET=privileges.LOGIN, POST=privileges.NO_AUTH)
@errormap.translate
def session_collection():
    """GET: the requester's live sessions; POST: log in."""
    store = sessions_of(flask.current_app)
    if flask.request.method == 'POST':
        return _login(store)
    return flask.jsonify(collection(store.list(_requester()),
                                    root.SESSIONS))


@base.route(root.SESSIONS + '/Members', POST=privileges.NO_AUTH)
@errormap.translate
def session_members():
    """POST: log in, as to the collection (DSP0266's Members URI)."""
    return _login(sessions_of(flask.current_app))


@base.route(root.SESSIONS + '/<session_id>', GET=privileges.LOGIN,
            DELETE=privileges.CONFIGURE_SELF)
@errormap.translate
def session_resource(session_id):
    """GET: one session; DELETE: log it out, for every worker."""
    store = sessions_of(flask.current_app)
    session = store.get(session_id, _requester())
    if session is None:
        raise error.NotFound()
    if flask.request.method == 'DELETE':
        if not store.delete(session_id):
            raise error.NotFound()
        flask.current_app.logger.info('Session %s deleted', session_id)
        return flask.Response(status=204)
    return flask.jsonify(resource(session, root.SESSIONS))
