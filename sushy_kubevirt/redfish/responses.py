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
  the ``minimum`` feature set).
"""

import json

import flask
from sushy_tools import error
from werkzeug import exceptions

from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody

ODATA_VERSION = '4.0'
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
    response.set_data(json.dumps(messages.body(exc, response.status_code)))
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


def finish(response):
    """Edit ``response`` as the module docstring says."""
    response.headers['OData-Version'] = ODATA_VERSION
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
    if base.plugin_driver(app):
        finish(response)
