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

"""Request hooks that extend sushy-tools' routes for capable drivers.

Routes cannot be added to ``main.app`` from the config file (it may not exist
yet), so these hooks wrap ``Application.preprocess_request`` and
``Application.process_response``. They act only when
``SUSHY_EMULATOR_SYSTEMS_DRIVER`` is set and the driver has the method a hook
needs; every other driver keeps the stock behaviour.

- ``GET /metrics``: the driver's ``metrics_text()`` (Prometheus text format),
  behind the emulator's own authentication; 404 otherwise.
- ``PATCH /redfish/v1/Systems/<id>``: the body (``Boot`` and
  ``IndicatorLED`` values included) is validated before anything changes,
  and ``Boot.BootSourceOverrideEnabled`` reaches the driver's
  ``set_boot_device`` through :func:`requested_boot_override` (a PATCH with
  only ``BootSourceOverrideEnabled`` re-applies the current target).
- ``GET /redfish/v1/Systems/<id>``: ``BootSourceOverrideEnabled`` is the
  driver's ``get_boot_source_override_enabled(identity)`` instead of the
  template's constant ``Continuous``, and the template's misspelt
  ``HealthRollUp`` is the schema's ``HealthRollup``.
- ``GET /redfish/v1/Managers/<id>``: ``ServiceEntryPointUUID`` is the service
  root's UUID instead of null.
- ``POST .../VirtualMedia.InsertMedia``: a body that is not a JSON object
  is a 400 (the stock route would fail with a 500).
- ``GET /redfish/v1/Systems/<id>/VirtualMedia/<device>``: adds the vmedia
  driver's ``get_device_status(identity, device)`` properties (import
  ``Status`` and an ``Oem`` section).
- ``GET /redfish/v1/Systems/<id>/Processors/<cpu>``: ``TotalCores`` and
  ``TotalThreads`` are integers, as the schema says (the stock template
  renders them as strings).
"""

import json

import flask
from sushy_tools import error

from sushy_kubevirt.kubevirt import indicator

OVERRIDE_ENABLED = ('Once', 'Continuous', 'Disabled')
BOOT_MODES = ('UEFI', 'Legacy')
# DMTF ComputerSystem.BootSource; the driver decides which it can honour.
BOOT_TARGETS = (
    'None', 'Pxe', 'Floppy', 'Cd', 'Usb', 'Hdd', 'BiosSetup', 'Utilities',
    'Diags', 'UefiShell', 'UefiTarget', 'SDCard', 'UefiHttp', 'RemoteDrive',
    'UefiBootNext', 'Recovery')
_BOOT_KEYS = frozenset((
    'BootSourceOverrideEnabled', 'BootSourceOverrideTarget',
    'BootSourceOverrideMode', 'HttpBootUri'))
_SYSTEM_KEYS = frozenset(('Boot', 'IndicatorLED'))
VMEDIA_KEY = 'SUSHY_EMULATOR_VMEDIA_DRIVER'
_G_ENABLED = 'sushy_kubevirt_boot_override_enabled'
_METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8'


def requested_boot_override():
    """``BootSourceOverrideEnabled`` of the current PATCH, or None."""
    if not flask.has_app_context():
        return None
    return flask.g.get(_G_ENABLED)


def _extension(app, key, method):
    """The systems driver's ``method`` if our kind of driver is in use."""
    if not app.config.get(key):
        return None
    return getattr(app.systems, method, None)


def _choice(name, value, allowed):
    if value is not None and value not in allowed:
        raise error.BadRequest(
            '%s %r is not one of: %s' % (name, value, ', '.join(allowed)))


def _check_system_patch(body):
    if not isinstance(body, dict):
        raise error.BadRequest('The request body must be a JSON object')
    extra = sorted(set(body) - _SYSTEM_KEYS)
    if extra:
        raise error.BadRequest(
            'Property %s is read-only or unknown; only Boot and IndicatorLED '
            'can be changed' % ', '.join(extra))
    _choice('IndicatorLED', body.get('IndicatorLED'), indicator.STATES)
    boot = body.get('Boot')
    if boot is None:
        return None
    if not isinstance(boot, dict):
        raise error.BadRequest('Boot must be a JSON object')
    extra = sorted(set(boot) - _BOOT_KEYS)
    if extra:
        raise error.BadRequest(
            'Boot property %s is read-only or unknown' % ', '.join(extra))
    _choice('BootSourceOverrideEnabled',
            boot.get('BootSourceOverrideEnabled'), OVERRIDE_ENABLED)
    _choice('BootSourceOverrideTarget',
            boot.get('BootSourceOverrideTarget'), BOOT_TARGETS)
    _choice('BootSourceOverrideMode',
            boot.get('BootSourceOverrideMode'), BOOT_MODES)
    return boot


def _prepare_system_patch(app, key):
    if _extension(app, key, 'get_boot_source_override_enabled') is None:
        return
    boot = _check_system_patch(flask.request.get_json())
    enabled = boot and boot.get('BootSourceOverrideEnabled')
    if not enabled:
        return
    flask.g.setdefault(_G_ENABLED, enabled)
    if not boot.get('BootSourceOverrideTarget'):
        # Changing only Enabled keeps the current target; the stock route
        # reads the (cached) parsed body, so it sees the filled-in target.
        identity = flask.request.view_args['identity']
        boot['BootSourceOverrideTarget'] = app.systems.get_boot_device(
            identity)


def _metrics(app, key):
    if flask.request.method != 'GET':
        raise error.FishyError('Only GET is allowed on /metrics', 405)
    text = _extension(app, key, 'metrics_text')
    if text is None:
        raise error.NotFound(
            'No metrics: the configured systems driver exports none')
    return flask.Response(text(), content_type=_METRICS_TYPE)


def _rewrite_json(response, edit):
    body = json.loads(response.get_data())
    if edit(body):
        # Compact: json.dumps with indent falls back to the slow
        # pure-Python encoder (~8 % of a warm GET).
        response.set_data(json.dumps(body))


def _system_body(app, key, response):
    getter = _extension(app, key, 'get_boot_source_override_enabled')
    if getter is None:
        return
    enabled = getter(flask.request.view_args['identity'])

    def edit(body):
        boot = body.setdefault('Boot', {})
        boot['BootSourceOverrideEnabled'] = enabled
        boot['BootSourceOverrideEnabled@Redfish.AllowableValues'] = list(
            OVERRIDE_ENABLED)
        for status in (body.get('Status'),
                       body.get('ProcessorSummary', {}).get('Status'),
                       body.get('MemorySummary', {}).get('Status')):
            if status and 'HealthRollUp' in status:
                status['HealthRollup'] = status.pop('HealthRollUp')
        return True

    _rewrite_json(response, edit)


def _manager_body(app, key, response):
    if not app.config.get(key):
        return
    root = json.loads(app.render_template('root.json'))

    def edit(body):
        if body.get('ServiceEntryPointUUID', '') is not None:
            return False
        body['ServiceEntryPointUUID'] = root['UUID']
        return True

    _rewrite_json(response, edit)


def _processor_body(app, key, response):
    if not app.config.get(key):
        return

    def edit(body):
        changed = False
        for name in ('TotalCores', 'TotalThreads'):
            value = body.get(name)
            if isinstance(value, str) and value.isdigit():
                body[name] = int(value)
                changed = True
        return changed

    _rewrite_json(response, edit)


def _virtual_media_body(app, response):
    if not app.config.get(VMEDIA_KEY):
        return
    extra = getattr(app.vmedia, 'get_device_status', None)
    if extra is None:
        return
    args = flask.request.view_args
    properties = extra(args['identity'], args['device'])
    _rewrite_json(response, lambda body: body.update(properties) or True)


def before_request(app, key):
    """Serve /metrics; validate and prepare a System PATCH."""
    request = flask.request
    if request.path.rstrip('/') == '/metrics':
        return _metrics(app, key)
    if request.endpoint == 'system_resource' and request.method == 'PATCH':
        _prepare_system_patch(app, key)
    if (request.endpoint == 'VirtualMedia.virtual_media_insert'
            and app.config.get(VMEDIA_KEY)
            and not isinstance(request.get_json(), dict)):
        raise error.BadRequest('The InsertMedia body must be a JSON object')
    return None


def after_request(app, key, response):
    """Render driver values the stock templates cannot show."""
    request = flask.request
    if request.method != 'GET' or response.status_code != 200:
        return response
    try:
        if request.endpoint == 'system_resource':
            _system_body(app, key, response)
        elif request.endpoint == 'manager_resource':
            _manager_body(app, key, response)
        elif request.endpoint == 'processor':
            _processor_body(app, key, response)
        elif request.endpoint == 'VirtualMedia.virtual_media_resource':
            _virtual_media_body(app, response)
    except (error.FishyError, ValueError) as exc:
        app.logger.warning('Could not extend %s: %s', request.path, exc)
    return response


def install(cls, originals, key):
    """Wrap ``cls.preprocess_request`` / ``process_response``.

    :param originals: the unpatched members of ``cls`` by name.
    :param key: the config key that names the systems driver.
    """
    def preprocess_request(self):
        rv = originals['preprocess_request'](self)
        if rv is None:
            rv = before_request(self, key)
        return rv

    def process_response(self, response):
        response = after_request(self, key, response)
        return originals['process_response'](self, response)

    cls.preprocess_request = preprocess_request
    cls.process_response = process_response
