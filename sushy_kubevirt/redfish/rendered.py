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
"""

import weakref

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import etags

ENDPOINT = 'system_resource'
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
