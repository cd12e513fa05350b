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

"""ETags of Systems and their sub-resources; If-Match and If-None-Match.

Every GET under ``/redfish/v1/Systems/<id>`` carries the System's ETag
(:mod:`sushy_kubevirt.kubevirt.versions`); a GET whose ``If-None-Match``
names it answers 304. A PATCH, POST, PUT or DELETE there with an
``If-Match`` that does not name the current ETag answers 412
PreconditionFailed before anything is changed; one that does is held to
it by the Kubernetes write itself
(:mod:`sushy_kubevirt.drivers.preconditions`), so a write that another
one overtook answers 412 too.
"""

import flask
from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import query

SYSTEMS = '/redfish/v1/Systems/'
#: The WSGI environ key of this GET's System ETag, once computed (the
#: request reads one snapshot of the cache: it cannot change).
KNOWN = 'sushy_kubevirt.etag'
WRITES = ('PATCH', 'POST', 'PUT', 'DELETE')


def identity():
    """The System id of the current request, else None."""
    request = flask.request
    if not request.path.startswith(SYSTEMS):
        return None
    return (request.view_args or {}).get('identity')


def conditional():
    """True for a write with an If-Match other than ``*``."""
    request = flask.request
    return request.method in WRITES and 'If-Match' in request.headers \
        and not request.if_match.star_tag


def matches(current):
    """True when the request's If-Match names ETag ``current``."""
    return flask.request.if_match.contains(current.strip('"'))


def failed(current):
    """412 for an If-Match that does not name ``current``."""
    return messages.RedfishError(
        'PreconditionFailed', code=412, headers={'ETag': current},
        detail='If-Match %s does not name the current ETag %s of this '
        'System; nothing was changed' % (flask.request.headers['If-Match'],
                                         current))


def tag(response, current):
    """Give a 200 GET its ETag; 304 when If-None-Match names it."""
    current = query.etag(current)   # a query's answer: another one
    if current is None:
        return
    request = flask.request
    response.headers['ETag'] = current
    if request.if_none_match.contains(current.strip('"')) or \
            request.if_none_match.star_tag:
        response.status_code = 304
        response.set_data(b'')


def check(app, **view_args):
    """A ``before`` handler: If-Match on a write under a System."""
    if flask.request.method not in WRITES:
        return None
    ident = identity()
    if ident is None or not conditional():
        return None
    systems = base.systems_driver(app, 'hold_etag')
    if systems is not None:
        current = systems.hold_etag(ident, matches, context.current())
        if current is not None:
            raise failed(current)
    return None


def after(app, response):
    """An ``after`` handler: the ETag of a 200 GET under a System."""
    if flask.request.environ.get(base.KEPT):
        return   # tagged when it was rendered
    ident = identity()
    if ident is None or response.status_code != 200 or \
            flask.request.method not in ('GET', 'HEAD'):
        return
    systems = base.systems_driver(app, 'get_etag')
    current = flask.request.environ.get(KNOWN)
    try:
        if current is None and systems is not None:
            current = systems.get_etag(ident)
    except error.FishyError:
        current = None
    if current is not None:
        tag(response, current)
