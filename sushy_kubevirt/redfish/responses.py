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

"""What every response of a plugin driver gets, whatever its route.

* ``OData-Version: 4.0`` (Redfish DSP0266 requires it on every response);
* no ``@Redfish.Copyright``: sushy-tools' templates copy it from DMTF's
  mockups, and the annotation is only allowed there;
* an error body that is not a Redfish error (sushy-tools answers some
  400s with plain text, e.g. "PATCH only works for IndicatorLED element")
  or is sushy-tools' ``error.json`` (``Base.1.0.GeneralError`` whatever
  happened) becomes one, with the Base registry MessageId its status
  implies;
* a 405 names the methods the URL allows (``Allow``), also when a
  sushy-tools view refuses a method its route has (e.g. a Manager PATCH in
  the ``minimum`` feature set);
* a successful GET or HEAD names the methods its route serves and
  declares (``Allow``) and, for JSON, what describes it (``Link: <...>;
  rel=describedby``): the DMTF JSON schema of its ``@odata.type``, else
  ``$metadata``;
* ``Cache-Control: no-cache``: resources change, a cache revalidates
  (``ETag``);
* a 204 has no body, so no ``Content-Type`` (Flask would say
  ``text/html`` of the empty body of a view's or sushy-tools' 204);
* a request whose ``OData-Version`` is not ours is refused with a 412
  (:func:`check_odata_version`).
"""

import json
import re

import flask
from sushy_tools import error
from werkzeug import exceptions

from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody

ODATA_VERSION = '4.0'
SCHEMAS = 'http://redfish.dmtf.org/schemas/v1/'
METADATA = '/redfish/v1/$metadata'
#: ``"@odata.type": "#Namespace[.vX_Y_Z].Type"``.
_ODATA_TYPE = re.compile(
    rb'"@odata\.type"\s*:\s*"#([A-Za-z0-9]+(?:\.v[0-9_]+)?)\.[A-Za-z0-9]+"')
#: ``{(endpoint, method): privilege}`` of every route (:func:`declare`).
_DECLARED = {}
#: Flask rule -> its ``Allow`` header, computed once.
_ALLOW = {}
_COPYRIGHT_BYTES = jsonbody.COPYRIGHT.encode()
#: How much of a plain-text error is kept as the Redfish ``message``.
_TEXT_LIMIT = 512


#: ``error.code`` of sushy-tools' own ``error.json`` template.
STOCK_CODE = 'Base.1.0.GeneralError'


def _redfish_error(data):
    return isinstance(data, dict) and isinstance(data.get('error'), dict) \
        and data['error'].get('code') != STOCK_CODE


def _as_redfish_error(response):
    data = jsonbody.load(response)
    if _redfish_error(data):
        return
    if isinstance(data, dict) and isinstance(data.get('error'), dict):
        text = str(data['error'].get('message') or '')
    else:
        text = response.get_data().decode('utf-8', 'replace').strip()
    exc = error.FishyError(text[:_TEXT_LIMIT] or response.status,
                           response.status_code)
    response.set_data(json.dumps(messages.body(
        exc, response.status_code, flask.request.path)))
    response.content_type = 'application/json'


def _unchanged(body):
    return False


def _allow(response):
    request = flask.request
    try:
        methods = flask.current_app.url_map.bind('').allowed_methods(
            request.path)
    except exceptions.HTTPException:
        methods = []
    allowed = sorted(set(methods) - {request.method})
    if allowed:
        response.headers['Allow'] = ', '.join(allowed)


def declare(needs):
    """Set the ``{(endpoint, method): privilege}`` of every route."""
    _DECLARED.clear()
    _DECLARED.update(needs)
    _ALLOW.clear()


def _declared(endpoint, method):
    return (endpoint, 'GET' if method == 'HEAD' else method) in _DECLARED


def _served(rule):
    """The declared methods of every endpoint of ``rule``, sorted."""
    if rule not in _ALLOW:
        _ALLOW[rule] = ', '.join(sorted({
            method for each in flask.current_app.url_map.iter_rules()
            if each.rule == rule for method in each.methods
            if _declared(each.endpoint, method)}))
    return _ALLOW[rule]


def _described_by(body):
    """The schema of the body's own ``@odata.type``, else $metadata."""
    found = _ODATA_TYPE.search(body)
    if found is None or body.count(b'{', 0, found.start()) != 1:
        return METADATA   # none, or the first one is not the body's
    return '%s%s.json' % (SCHEMAS, found.group(1).decode())


def check_odata_version(app, **view_args):
    """A ``before`` handler: a 412 unless OData-Version is 4.0 or absent."""
    version = flask.request.environ.get('HTTP_ODATA_VERSION')
    if base.plugin_driver(app) and version not in (None, ODATA_VERSION):
        raise messages.RedfishError(
            'PreconditionFailed', code=412,
            detail='OData-Version %s is not supported; this service '
            'speaks OData %s' % (version, ODATA_VERSION))


def finish(response):
    """Edit ``response`` as the module docstring says."""
    response.headers['OData-Version'] = ODATA_VERSION
    response.headers.setdefault('Cache-Control', 'no-cache')
    if response.status_code == 204:
        response.headers.pop('Content-Type', None)
    request = flask.request
    if response.status_code == 200 and request.method in ('GET', 'HEAD') \
            and request.url_rule is not None:
        allow = _served(request.url_rule.rule)
        if allow:
            response.headers.setdefault('Allow', allow)
        if response.mimetype == 'application/json' and \
                'Link' not in response.headers:
            response.headers['Link'] = '<%s>; rel=describedby' % \
                _described_by(response.get_data())
    if response.status_code == 405 and 'Allow' not in response.headers:
        _allow(response)
    if response.status_code >= 400:
        _as_redfish_error(response)
    elif response.mimetype == 'application/json' and \
            _COPYRIGHT_BYTES in response.get_data():
        jsonbody.rewrite(response, _unchanged)   # drops the annotation
    return response


def after(app, response):
    """An ``after`` handler: :func:`finish` for plugin drivers."""
    if base.plugin_driver(app) and not flask.request.environ.get(base.KEPT):
        finish(response)
