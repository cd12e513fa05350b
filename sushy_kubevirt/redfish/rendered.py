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

"""A System's GET is rendered once per ETag.

The ETag (:mod:`sushy_kubevirt.kubevirt.versions`) changes with anything
a System is rendered from, so the finished answer of a plain GET (no
query) is kept with it: while the System's ETag is the same, the next GET
is answered with those bytes and headers, after the same authentication,
authorization and ``OData-Version`` checks (a conditional GET is answered
as before: a 304 when its ``If-None-Match`` names the ETag). Each process
keeps the last answer of each System of its systems driver (a new
configuration starts afresh). The ``after`` handlers that edited the
rendered answer (ETag, OData-Version, Allow, Link...) skip a kept one:
its headers are those they gave it.

:class:`Kept` answers a kept answer before Flask itself, for a request
that Flask would answer with it anyway: its route, checks and ``after``
handlers would only repeat what they did when the answer was kept, and
Flask's request context, routing and response are most of a warm GET's
cost (see the benchmarks' *The framework's limit*). It runs after
authentication, and asks what Flask's hooks ask of the request's
account (:func:`.access.request_account`): the route's privilege, and
that the account reaches the VM. An account the cluster's RBAC decides
for (Kubernetes accounts) goes through Flask.
"""

import weakref

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import etags
from sushy_kubevirt.redfish import responses

ENDPOINT = 'system_resource'
#: Its URL rule up to the id.
PREFIX = '/redfish/v1/Systems/'
#: Request headers that make a GET other than plain (the ``before``
#: handlers would act on them).
NOT_PLAIN = ('HTTP_IF_NONE_MATCH', 'HTTP_TRANSFER_ENCODING')
#: Settings under which Flask's routing or sushy-tools' view may answer
#: otherwise for the same request (host checks, an allow list).
ROUTING = ('SERVER_NAME', 'TRUSTED_HOSTS',
           'SUSHY_EMULATOR_ALLOWED_INSTANCES')
#: Systems whose answer a process keeps at most (then it starts afresh).
LIMIT = 200000
_KEY = 'sushy_kubevirt.rendered'
#: systems driver -> {System id: (ETag, body, headers)}.
_KEPT = weakref.WeakKeyDictionary()


def _plain_get():
    request = flask.request
    environ = request.environ
    return request.method == 'GET' and request.endpoint == ENDPOINT \
        and (not environ.get('QUERY_STRING') or not request.args) \
        and 'HTTP_IF_NONE_MATCH' not in environ


def _systems(app):
    return base.systems_driver(app, 'get_etag') if _plain_get() else None


def answer(app, identity=None, **view_args):
    """A ``before`` handler: the kept answer while its ETag holds."""
    systems = _systems(app)
    if systems is None or api_utils.instance_denied(identity=identity):
        return None
    try:
        current = systems.get_etag(identity)
    except error.FishyError:
        return None   # the stock view answers (not found, an alias...)
    flask.request.environ[_KEY] = current
    flask.request.environ[etags.KNOWN] = current
    kept = _KEPT.get(systems, {}).get(identity)
    if kept is None or kept[0] != current:
        return None
    flask.request.environ[_KEY] = None   # nothing new to keep
    flask.request.environ[base.KEPT] = True
    return flask.Response(kept[1], 200, kept[2])


def keep(app, response):
    """An ``after`` handler (the last): keep a rendered 200 answer."""
    current = flask.request.environ.get(_KEY)
    if not current or response.status_code != 200 or \
            response.headers.get('ETag') != current:
        return
    systems = _systems(app)
    if systems is None:
        return
    kept = _KEPT.setdefault(systems, {})
    if len(kept) >= LIMIT:
        kept.clear()
    kept[flask.request.view_args['identity']] = (
        current, response.get_data(), list(response.headers.items()))


class Kept:
    """WSGI: the kept answer of a plain System GET, else ``wrapped``.

    :param app: the Flask application (its config and systems driver).
    :param wrapped: its WSGI callable (Flask's own).
    :param privilege: what a GET of a System needs.
    """

    def __init__(self, app, wrapped, privilege):
        self.app = app
        self.wrapped = wrapped
        self.privilege = privilege

    def __call__(self, environ, start_response):
        kept = self._kept(environ)
        if kept is None:
            return self.wrapped(environ, start_response)
        start_response('200 OK', list(kept[2]))
        return [kept[1]]

    def _kept(self, environ):
        path = environ.get('PATH_INFO', '')
        if environ.get('REQUEST_METHOD') != 'GET' or \
                not path.startswith(PREFIX) or environ.get('QUERY_STRING') \
                or environ.get('CONTENT_LENGTH') not in (None, '', '0') or \
                environ.get('HTTP_ODATA_VERSION', responses.ODATA_VERSION) \
                != responses.ODATA_VERSION or \
                any(name in environ for name in NOT_PLAIN):
            return None
        settings = self.app.config
        if any(settings.get(name) is not None for name in ROUTING):
            return None
        systems = base.systems_driver(self.app, 'kept_etag')
        ident = path[len(PREFIX):]
        kept = _KEPT.get(systems, {}).get(ident) \
            if systems is not None and ident.isascii() else None
        if kept is None:
            return None
        try:
            account = access.request_account(self.app, environ)
        except messages.RedfishError:
            return None   # Flask answers it
        if account is None:
            reaches = _everything
        elif isinstance(account, kubeaccounts.KubeAccount) or \
                not account.allows(self.privilege):
            return None
        else:
            reaches = account.reaches
        return kept if systems.kept_etag(ident, reaches) == kept[0] else None


def _everything(namespace, labels):
    return True
