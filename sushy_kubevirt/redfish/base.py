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

"""What every handler under :mod:`sushy_kubevirt.redfish` needs.

* :data:`blueprint` and :func:`route`: the URIs sushy-tools has no route
  for, each declared with the privilege every method needs
  (:data:`ROUTES`);
* the drivers: :func:`systems_driver` and :func:`plugin_driver`, which
  say whether a plugin driver serves the request (every other driver
  keeps sushy-tools' own behaviour);
* the request body: :func:`json_body` with its checks, bounded by
  :data:`MAX_BODY` and by :class:`JSONProvider`'s nesting guard;
* error rendering: :func:`error_response`, a Redfish error with a Base
  registry MessageId (:mod:`sushy_kubevirt.messages`).
"""

import dataclasses
import functools
import json
import logging
import re

import flask
from flask.json import provider as json_provider
from werkzeug import exceptions

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt import config
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import jsonbody

#: The name of the extension points that apply to every request.
EVERY = '*'
#: Largest request body a plugin driver accepts (413 above).
MAX_BODY = 1024 * 1024
#: What is read of a chunked body: Werkzeug stops at its limit without a
#: word, so one byte more tells :meth:`Request.get_data` it is too large.
_READ_LIMIT = MAX_BODY + 1
#: An id a redirect may name: unreserved characters (RFC 3986), starting
#: with a letter or digit (so never a dot segment).
_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9._~-]*')
#: WSGI environ key, True when the answer is a kept one
#: (:mod:`.rendered`): the ``after`` handlers that edited it once have
#: nothing left to do.
KEPT = 'sushy_kubevirt.kept'

blueprint = flask.Blueprint('sushy_kubevirt', __name__)


@dataclasses.dataclass(frozen=True)
class Route:
    """A URI of :data:`blueprint`, served by one handler."""

    #: The Flask URL rule.
    rule: str
    #: The view function.
    handler: object
    #: HTTP method -> the privilege it needs (:mod:`.privileges`).
    privileges: dict


#: Every route of :data:`blueprint`, in declaration order.
ROUTES = []


def route(rule, **needs):
    """Declare a route of :data:`blueprint`: ``GET=privileges.LOGIN``..."""
    unknown = set(needs.values()) - set(privileges.ALL)
    if unknown or not needs:
        raise ValueError('%s: no method or unknown privilege %s'
                         % (rule, sorted(unknown)))

    def register(handler):
        blueprint.add_url_rule(rule, view_func=handler, methods=list(needs))
        ROUTES.append(Route(rule, handler, dict(needs)))
        return handler
    return register


def plugin_driver(app):
    """True when a plugin systems driver serves this request."""
    return bool(app.config.get(config.SYSTEMS_DRIVER_KEY))


def vmedia_driver(app):
    """True when a plugin virtual-media driver serves this request."""
    return bool(app.config.get(config.VMEDIA_DRIVER_KEY))


def systems_driver(app, method):
    """The systems driver if a plugin driver with ``method`` is in use."""
    if not plugin_driver(app):
        return None
    systems = app.systems
    return systems if hasattr(systems, method) else None


def json_body():
    """The request body as a JSON object, else a 400 MalformedJSON."""
    body = flask.request.get_json(force=True, silent=True)
    if not isinstance(body, dict):
        raise messages.RedfishError(
            'MalformedJSON', detail='The request body must be a JSON object')
    return body


def choice(prop, value, allowed):
    """A 400 PropertyValueNotInList unless ``value`` is None or allowed."""
    if value is not None and value not in allowed:
        raise messages.RedfishError(
            'PropertyValueNotInList', value, prop, properties=['/' + prop],
            detail='%s %r is not one of: %s'
            % (prop.rpartition('/')[2], value, ', '.join(allowed)))


def unknown(body, allowed, prefix=''):
    """A 400 PropertyUnknown unless every key of ``body`` is allowed."""
    extra = sorted(set(body) - set(allowed))
    if extra:
        name = prefix + extra[0]
        raise messages.RedfishError(
            'PropertyUnknown', name, properties=['/' + name],
            detail='Property %s is read-only or unknown; only %s can be '
            'changed' % (', '.join(extra), ', '.join(allowed)))


def one_boolean(body, name):
    """400 unless ``body`` is exactly ``{name: true|false}``."""
    unknown(body, (name,))
    if name not in body:
        raise messages.RedfishError('PropertyMissing', name,
                                    properties=['/' + name])
    if not isinstance(body[name], bool):
        raise messages.RedfishError(
            'PropertyValueTypeError', json.dumps(body[name]), name,
            properties=['/' + name])


def json_response(body, status=200, headers=None):
    return flask.Response(json.dumps(body), status=status, headers=headers,
                          content_type='application/json')


def editor(edit):
    """An ``after`` handler applying ``edit(body)`` for plugin drivers."""
    @functools.wraps(edit)   # its module names it in plugin.uri_table
    def after(app, response):
        if plugin_driver(app):
            jsonbody.rewrite(response, edit)
    return after


def error_response(exc, code):
    """``exc`` as a Redfish error response with status ``code``."""
    response = flask.Response(
        json.dumps(messages.body(exc, code, flask.request.path)), status=code,
        content_type='application/json')
    headers = getattr(exc, 'headers', None) or {}
    if isinstance(exc, exceptions.HTTPException):
        headers = dict(exc.get_headers())
        headers.pop('Content-Type', None)
    response.headers.update(headers)
    return response


def alias_redirect(target):
    """The 307 from an alias: this route and its arguments, id ``target``.

    ``target`` must be one path segment of unreserved characters that is
    no dot segment (as every System, Manager and Chassis id is);
    otherwise the answer is a 404, never a redirect elsewhere.
    """
    request = flask.request
    if not (isinstance(target, str) and _ID.fullmatch(target)) or \
            'identity' not in (request.view_args or {}):
        return error_response(exceptions.NotFound(), 404)
    location = flask.url_for(request.endpoint,
                             **dict(request.view_args, identity=target))
    return flask.redirect(location, code=307, Response=flask.Response)


def _too_large():
    return exceptions.RequestEntityTooLarge(
        'The request body is larger than %d bytes' % MAX_BODY)


def limit_body(request):
    """A 413 for a body over :data:`MAX_BODY`."""
    if request.environ.get('CONTENT_LENGTH') and \
            (request.content_length or 0) > MAX_BODY:
        raise _too_large()
    # Also bounds a chunked body, which has no Content-Length.
    request.max_content_length = _READ_LIMIT


class JSONProvider(json_provider.DefaultJSONProvider):
    """Flask's JSON, with nesting too deep for the parser a ValueError.

    Every body read with ``request.get_json`` or ``request.json`` (ours
    and sushy-tools' views alike) goes through it.
    """

    def loads(self, s, **kwargs):
        try:
            return super().loads(s, **kwargs)
        except RecursionError:
            raise ValueError('JSON nested too deeply') from None


class Request(flask.Request):
    """A body that is not JSON is a 400 MalformedJSON, for every view.

    A body over :data:`MAX_BODY` (a chunked one, read to one byte more:
    :func:`limit_body`) is a 413, for every view.
    """

    #: Set by :func:`limit_body`; None: Flask's (``MAX_CONTENT_LENGTH``).
    _body_limit = None

    @property
    def max_content_length(self):
        """Settable on every Flask (before 3.1 it was read-only)."""
        if self._body_limit is not None:
            return self._body_limit
        return super().max_content_length

    @max_content_length.setter
    def max_content_length(self, value):
        self._body_limit = value

    def get_data(self, cache=True, as_text=False, parse_form_data=False):
        data = super().get_data(cache, False, parse_form_data)
        if len(data) > MAX_BODY and self.max_content_length == _READ_LIMIT:
            raise _too_large()
        return data.decode(errors='replace') if as_text else data

    def on_json_loading_failed(self, e):
        if e is None:
            return super().on_json_loading_failed(e)
        raise messages.RedfishError(
            'MalformedJSON', detail='The request body is not valid JSON')


class RedactCredentials(logging.Filter):
    """Remove URL userinfo from log records (sushy-tools logs Images)."""

    def filter(self, record):
        if isinstance(record.msg, str):
            record.msg = imageurl.redact(record.msg)
        if isinstance(record.args, dict):
            record.args = {k: _redacted(v) for k, v in record.args.items()}
        elif record.args:
            record.args = tuple(_redacted(v) for v in record.args)
        return True


def _redacted(value):
    return imageurl.redact(value) if isinstance(value, str) else value
