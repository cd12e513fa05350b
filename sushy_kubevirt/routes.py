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

"""The handlers behind :data:`sushy_kubevirt.plugin.EXTENSION_POINTS`.

:func:`install` adds them to ``main.app`` with Flask's public hooks: a
``before_request`` hook runs an endpoint's ``before`` handler (a response
it returns replaces the stock view), an ``after_request`` hook runs its
``after`` handler on a stock 200 GET, our blueprint serves what sushy-tools
has no route for (``/metrics``), and error handlers render every error of a
plugin driver with a Base registry MessageId. Each handler acts only when
``SUSHY_EMULATOR_SYSTEMS_DRIVER`` (or ``..._VMEDIA_DRIVER``) names a driver
with the method it needs; every other driver keeps the stock behaviour.
"""

import datetime
import json
import logging
import uuid

import flask
from flask.json import provider as json_provider
from sushy_tools.emulator import api_utils
from sushy_tools import error
from werkzeug import exceptions

from sushy_kubevirt.drivers import errormap
from sushy_kubevirt.drivers import subscriptions
from sushy_kubevirt.kubevirt import boot as kubevirt_boot
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import indicator
from sushy_kubevirt.kubevirt import power
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import body as body_mod
from sushy_kubevirt.redfish import chassis
from sushy_kubevirt.redfish import etags
from sushy_kubevirt.redfish import memory
from sushy_kubevirt.redfish import oem
from sushy_kubevirt.redfish import responses
from sushy_kubevirt.redfish import root
from sushy_kubevirt.redfish import services
from sushy_kubevirt.redfish import sessions

SYSTEMS_KEY = 'SUSHY_EMULATOR_SYSTEMS_DRIVER'
VMEDIA_KEY = 'SUSHY_EMULATOR_VMEDIA_DRIVER'
OVERRIDE_ENABLED = ('Once', 'Continuous', 'Disabled')
BOOT_MODES = ('UEFI', 'Legacy')
# DMTF ComputerSystem.BootSource; the driver decides which it can honour.
BOOT_TARGETS = (
    'None', 'Pxe', 'Floppy', 'Cd', 'Usb', 'Hdd', 'BiosSetup', 'Utilities',
    'Diags', 'UefiShell', 'UefiTarget', 'SDCard', 'UefiHttp', 'RemoteDrive',
    'UefiBootNext', 'Recovery')
_BOOT_KEYS = ('BootSourceOverrideEnabled', 'BootSourceOverrideTarget',
              'BootSourceOverrideMode', 'HttpBootUri')
_SYSTEM_KEYS = ('Boot', 'IndicatorLED')
#: The name of the extension points that apply to every request.
EVERY = '*'
_METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
#: Largest request body a plugin driver accepts (413 above).
MAX_BODY = 1024 * 1024
_RESET = 'ComputerSystem.Reset'
EVENT_SERVICE = '/redfish/v1/EventService'
_TEST_EVENT = 'EventService.SubmitTestEvent'
_TEST_EVENT_URI = EVENT_SERVICE + '/Actions/' + _TEST_EVENT
_TEST_EVENT_KEYS = {'MessageId': str, 'Message': str, 'MessageArgs': list,
                    'OriginOfCondition': str, 'EventId': str,
                    'EventTimestamp': str, 'Severity': str,
                    'MessageSeverity': str, 'EventGroupId': int,
                    'EventType': str}
_SEVERITIES = ('OK', 'Warning', 'Critical')

blueprint = flask.Blueprint('sushy_kubevirt', __name__)


def systems_driver(app, method):
    """The systems driver if a plugin driver with ``method`` is in use."""
    if not app.config.get(SYSTEMS_KEY):
        return None
    systems = app.systems
    return systems if hasattr(systems, method) else None


def _choice(prop, value, allowed):
    if value is not None and value not in allowed:
        raise messages.RedfishError(
            'PropertyValueNotInList', value, prop, properties=['/' + prop],
            detail='%s %r is not one of: %s'
            % (prop.rpartition('/')[2], value, ', '.join(allowed)))


def _unknown(body, allowed, prefix=''):
    """A 400 PropertyUnknown unless every key of ``body`` is allowed."""
    extra = sorted(set(body) - set(allowed))
    if extra:
        name = prefix + extra[0]
        raise messages.RedfishError(
            'PropertyUnknown', name, properties=['/' + name],
            detail='Property %s is read-only or unknown; only %s can be '
            'changed' % (', '.join(extra), ', '.join(allowed)))


def json_body():
    """The request body as a JSON object, else a 400 MalformedJSON."""
    body = flask.request.get_json(force=True, silent=True)
    if not isinstance(body, dict):
        raise messages.RedfishError(
            'MalformedJSON', detail='The request body must be a JSON object')
    return body


def _check_system_patch(body):
    _unknown(body, _SYSTEM_KEYS)
    _choice('IndicatorLED', body.get('IndicatorLED'), indicator.STATES)
    boot = body.get('Boot')
    if boot is None:
        return {}
    if not isinstance(boot, dict):
        raise messages.RedfishError(
            'PropertyValueTypeError', boot, 'Boot', properties=['/Boot'],
            detail='Boot must be a JSON object')
    _unknown(boot, _BOOT_KEYS, 'Boot/')
    for prop, allowed in (('BootSourceOverrideEnabled', OVERRIDE_ENABLED),
                          ('BootSourceOverrideTarget', BOOT_TARGETS),
                          ('BootSourceOverrideMode', BOOT_MODES)):
        _choice('Boot/' + prop, boot.get(prop), allowed)
    uri = boot.get('HttpBootUri')
    if uri is not None and not isinstance(uri, str):
        raise messages.RedfishError(
            'PropertyValueTypeError', uri, 'Boot/HttpBootUri',
            properties=['/Boot/HttpBootUri'])
    return boot


def patch_system(app, identity):
    """PATCH a System of a plugin driver: validate, then apply.

    The stock route ignores ``BootSourceOverrideEnabled``; here it reaches
    ``set_boot_device(identity, target, enabled)``. A PATCH of only
    ``BootSourceOverrideEnabled`` re-applies the current target. Nothing
    changes unless the whole body is valid.
    """
    if flask.request.method != 'PATCH':
        return None
    systems = systems_driver(app, 'get_boot_source_override_enabled')
    if systems is None:
        return None
    if api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    uuid = systems.uuid(identity)
    body = json_body()
    boot = _check_system_patch(body)
    led = body.get('IndicatorLED')
    if not boot and not led:
        raise messages.RedfishError(
            'PropertyMissing', 'Boot', detail='PATCH needs Boot or '
            'IndicatorLED')
    if led and app.feature_set != 'full':
        raise messages.RedfishError(
            'PropertyUnknown', 'IndicatorLED', properties=['/IndicatorLED'],
            detail='IndicatorLED needs the "full" feature set')
    target = boot.get('BootSourceOverrideTarget')
    enabled = boot.get('BootSourceOverrideEnabled')
    uri = boot.get('HttpBootUri')
    if target is not None and not (target == 'UefiHttp' and uri):
        # UefiHttp with an HttpBootUri boots the image as a CD in either
        # mode (as in sushy-tools); without one it is a UEFI network boot.
        mode = boot.get('BootSourceOverrideMode') or \
            systems.get_boot_mode(identity)
        _choice('Boot/BootSourceOverrideTarget', target,
                boot_targets(mode))
    if uri and target == 'UefiHttp':
        # As the stock route: the URI is inserted as the CD and booted.
        image = app.vmedia.insert_image(identity, 'Cd', uri)
        systems.set_boot_image(uuid, 'Cd', boot_image=image,
                               write_protected=True)
        systems.set_http_boot_uri(identity, uri)
        target = 'Cd'
    elif target == 'UefiHttp':
        target = 'Pxe'
    if enabled and not target:
        target = systems.get_boot_device(identity)
    if target:
        systems.set_boot_device(identity, target, enabled)
    if boot.get('BootSourceOverrideMode'):
        systems.set_boot_mode(identity, boot['BootSourceOverrideMode'])
    if led:
        app.indicators.set_indicator_state(uuid, led)
    return flask.Response(status=204)


def check_reset_body(app, identity):
    """``ComputerSystem.Reset`` takes exactly one string ``ResetType``."""
    if systems_driver(app, 'get_boot_source_override_enabled') is None:
        return
    body = json_body()
    extra = sorted(set(body) - {'ResetType'})
    if extra:
        raise messages.RedfishError(
            'ActionParameterUnknown', _RESET, extra[0],
            properties=['/' + extra[0]])
    if 'ResetType' not in body:
        raise messages.RedfishError(
            'ActionParameterMissing', _RESET, 'ResetType',
            properties=['/ResetType'])
    if not isinstance(body['ResetType'], str):
        raise messages.RedfishError(
            'ActionParameterValueTypeError', json.dumps(body['ResetType']),
            'ResetType', _RESET, properties=['/ResetType'])


def check_secure_boot_patch(app, identity):
    """A SecureBoot PATCH sets exactly the boolean ``SecureBootEnable``."""
    if flask.request.method != 'PATCH' or \
            systems_driver(app, 'get_boot_source_override_enabled') is None:
        return
    _one_boolean(json_body(), 'SecureBootEnable')


def _one_boolean(body, name):
    """400 unless ``body`` is exactly ``{name: true|false}``."""
    _unknown(body, (name,))
    if name not in body:
        raise messages.RedfishError('PropertyMissing', name,
                                    properties=['/' + name])
    if not isinstance(body[name], bool):
        raise messages.RedfishError(
            'PropertyValueTypeError', json.dumps(body[name]), name,
            properties=['/' + name])


def _rewrite_json(response, edit):
    body_mod.rewrite(response, edit)


def boot_targets(mode):
    """The BootSourceOverrideTarget values accepted in boot ``mode``."""
    return kubevirt_boot.TARGETS if mode == 'UEFI' else tuple(
        t for t in kubevirt_boot.TARGETS if t != kubevirt_boot.UEFI_HTTP)


def system_body(app, response):
    systems = systems_driver(app, 'get_boot_source_override_enabled')
    if systems is None:
        return
    ident = flask.request.view_args['identity']
    enabled = systems.get_boot_source_override_enabled(ident)
    targets = systems.get_boot_targets(ident)

    def edit(body):
        boot = body.setdefault('Boot', {})
        if boot.get('HttpBootUri') == 'None':
            # The template renders an unset URI with ``|string``.
            boot['HttpBootUri'] = None
        boot['BootSourceOverrideEnabled'] = enabled
        boot['BootSourceOverrideEnabled@Redfish.AllowableValues'] = list(
            OVERRIDE_ENABLED)
        if 'BootSourceOverrideTarget@Redfish.AllowableValues' in boot:
            boot['BootSourceOverrideTarget@Redfish.AllowableValues'] = \
                list(targets)
        reset = body.get('Actions', {}).get('#ComputerSystem.Reset')
        if reset:
            reset['ResetType@Redfish.AllowableValues'] = list(
                power.SUPPORTED_RESET_TYPES)
        link = body.get('Bios', {}).get('@odata.id', '')
        if link.endswith('/BIOS') and hasattr(systems, 'get_bios_settings'):
            # The URI the schema allows (sushy_kubevirt.redfish.bios).
            body['Bios']['@odata.id'] = link[:-len('BIOS')] + 'Bios'
        for status in (body.get('Status'),
                       body.get('ProcessorSummary', {}).get('Status'),
                       body.get('MemorySummary', {}).get('Status')):
            if status and 'HealthRollUp' in status:
                status['HealthRollup'] = status.pop('HealthRollUp')
        return True

    _rewrite_json(response, edit)


def manager_body(app, response):
    if not app.config.get(SYSTEMS_KEY):
        return
    root = json.loads(app.render_template('root.json'))

    def edit(body):
        if body.get('ServiceEntryPointUUID', '') is not None:
            return False
        body['ServiceEntryPointUUID'] = root['UUID']
        return True

    _rewrite_json(response, edit)


def processor_body(app, response):
    if not app.config.get(SYSTEMS_KEY):
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


def patch_chassis(app, identity):
    """PATCH of a Chassis for plugin drivers: IndicatorLED, checked.

    The stock route answers anything else with a plain-text 400.
    """
    if flask.request.method != 'PATCH' or not plugin_driver(app):
        return None
    body = json_body()
    _unknown(body, ('IndicatorLED',))
    if 'IndicatorLED' not in body:
        raise messages.RedfishError(
            'PropertyMissing', 'IndicatorLED', detail='PATCH of a Chassis '
            'needs IndicatorLED')
    _choice('IndicatorLED', body['IndicatorLED'], indicator.STATES)
    return None


def check_insert_body(app, identity, device):
    """InsertMedia of a plugin vmedia driver needs a JSON object body."""
    if app.config.get(VMEDIA_KEY):
        json_body()


def systems_collection_body(app, response):
    """Name the namespaces a partial Systems collection leaves out."""
    systems = systems_driver(app, 'collection_messages')
    extended = systems.collection_messages() if systems is not None else []
    if extended:
        _rewrite_json(response, lambda body: body.update({
            '@Message.ExtendedInfo': extended}) or True)


def check_vmedia_patch(app, identity, device):
    """A VirtualMedia PATCH sets exactly the boolean VerifyCertificate.

    For a plugin vmedia driver; anything else is a 400 (a body that is
    not a JSON object too).
    """
    if not app.config.get(VMEDIA_KEY):
        return
    _one_boolean(json_body(), 'VerifyCertificate')


def virtual_media_body(app, response):
    if not app.config.get(VMEDIA_KEY):
        return
    extra = getattr(app.vmedia, 'get_device_status', None)
    if extra is None:
        return
    args = flask.request.view_args
    properties = extra(args['identity'], args['device'])

    def edit(body):
        body.update(properties)
        oem.typed(body, 'VirtualMedia')
        return True
    _rewrite_json(response, edit)


def event_service_of(app):
    """The systems driver's EventService, or None when it has none."""
    systems = systems_driver(app, 'event_service')
    return systems.event_service() if systems is not None else None


def _events():
    service = event_service_of(flask.current_app)
    if service is None:
        raise error.NotFound('No EventService: set '
                             'SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE')
    return service


def _json(body, status=200, headers=None):
    return flask.Response(json.dumps(body), status=status, headers=headers,
                          content_type='application/json')


def root_body(app, response):
    """The service root links the EventService when there is one."""
    if event_service_of(app) is None:
        return
    _rewrite_json(response, lambda body: body.update(
        EventService={'@odata.id': EVENT_SERVICE}) or True)


@blueprint.route(EVENT_SERVICE, methods=['GET'])
def event_service():
    s = _events().settings
    return _json({
        '@odata.type': '#EventService.v1_10_0.EventService',
        '@odata.id': EVENT_SERVICE,
        'Id': 'EventService', 'Name': 'Event Service',
        'ServiceEnabled': True,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'DeliveryRetryAttempts': s.retry_attempts,
        'DeliveryRetryIntervalSeconds': s.retry_interval,
        'EventFormatTypes': ['Event'],
        # Deprecated; accepted in a subscription (Ironic sends Alert).
        'EventTypesForSubscription': list(subscriptions.EVENT_TYPES),
        'RegistryPrefixes': list(subscriptions.REGISTRY_PREFIXES),
        'ResourceTypes': list(subscriptions.RESOURCE_TYPES),
        'SubordinateResourcesSupported': True,
        'Subscriptions': {'@odata.id': subscriptions.COLLECTION},
        'Actions': {'#' + _TEST_EVENT: {'target': _TEST_EVENT_URI}},
    })


@blueprint.route(subscriptions.COLLECTION, methods=['GET', 'POST'])
def event_subscriptions():
    service = _events()
    if flask.request.method == 'POST':
        sub = subscriptions.parse(json_body(), service.policy(),
                                  service.settings.timeout)
        sub = service.store.create(sub)
        return _json(sub.body(), 201, {
            'Location': '%s/%s' % (subscriptions.COLLECTION, sub.id)})
    subs = service.store.list()
    return _json({
        '@odata.type': '#EventDestinationCollection.'
                       'EventDestinationCollection',
        '@odata.id': subscriptions.COLLECTION,
        'Name': 'Event Subscriptions',
        'Members@odata.count': len(subs),
        'Members': [{'@odata.id': '%s/%s' % (subscriptions.COLLECTION,
                                             sub.id)} for sub in subs],
    })


@blueprint.route(subscriptions.COLLECTION + '/<sub_id>',
                 methods=['GET', 'DELETE'])
def event_subscription(sub_id):
    service = _events()
    if flask.request.method == 'DELETE':
        service.store.delete(sub_id)
        return flask.Response(status=204)
    return _json(service.store.get(sub_id).body())


def _test_event(body):
    for name in sorted(body):
        kind = _TEST_EVENT_KEYS.get(name)
        if kind is None:
            raise messages.RedfishError(
                'ActionParameterUnknown', _TEST_EVENT, name,
                properties=['/' + name])
        value = body[name]
        if not isinstance(value, kind) or isinstance(value, bool) or (
                kind is list and not all(isinstance(v, str)
                                         for v in value)):
            raise messages.RedfishError(
                'ActionParameterValueTypeError', json.dumps(value), name,
                _TEST_EVENT, properties=['/' + name])
    if 'MessageId' not in body:
        raise messages.RedfishError(
            'ActionParameterMissing', _TEST_EVENT, 'MessageId',
            properties=['/MessageId'])
    if body.get('EventType', 'Alert') not in subscriptions.EVENT_TYPES:
        raise messages.RedfishError(
            'ActionParameterValueNotInList', body['EventType'], 'EventType',
            _TEST_EVENT, properties=['/EventType'])
    for name in ('Severity', 'MessageSeverity'):
        if body.get(name, 'OK') not in _SEVERITIES:
            raise messages.RedfishError(
                'ActionParameterValueNotInList', body[name], name,
                _TEST_EVENT, properties=['/' + name])
    severity = body.get('MessageSeverity', body.get('Severity', 'OK'))
    record = {
        'EventId': body.get('EventId') or 'test-' + uuid.uuid4().hex,
        'EventTimestamp': body.get('EventTimestamp') or
        datetime.datetime.now(datetime.timezone.utc).isoformat(),
        'MessageId': body['MessageId'],
        'Message': body.get('Message', ''),
        'MessageArgs': body.get('MessageArgs', []),
        'MessageSeverity': severity, 'Severity': severity,
        'OriginOfCondition': {
            '@odata.id': body.get('OriginOfCondition', EVENT_SERVICE)},
    }
    for name in ('EventGroupId', 'EventType'):
        if name in body:
            record[name] = body[name]
    return record


@blueprint.route(_TEST_EVENT_URI, methods=['POST'])
def submit_test_event():
    service = _events()
    service.test_event(_test_event(json_body()))
    return flask.Response(status=204)


@blueprint.route('/metrics')
def metrics():
    """The systems driver's ``metrics_text()``; 404 for other drivers."""
    app = flask.current_app
    systems = systems_driver(app, 'metrics_text')
    if systems is None:
        raise error.NotFound(
            'No metrics: the configured systems driver exports none')
    return flask.Response(systems.metrics_text(),
                          content_type=_METRICS_TYPE)


def plugin_driver(app):
    """True when a plugin systems driver serves this request."""
    return bool(app.config.get(SYSTEMS_KEY))


def _etag(app, ident):
    systems = systems_driver(app, 'get_etag')
    return systems.get_etag(ident) if systems is not None else None


def precondition(app, **view_args):
    """If-Match on a write under a System (:mod:`.redfish.etags`)."""
    ident = etags.identity()
    if ident is None or not etags.conditional():
        return None
    systems = systems_driver(app, 'hold_etag')
    if systems is not None:
        current = systems.hold_etag(ident, etags.matches)
        if current is not None:
            raise etags.failed(current)
    return None


def finish(app, response):
    """Every response of a plugin driver.

    :mod:`.redfish.responses`, and the ETags of :mod:`.redfish.etags`.
    """
    if not plugin_driver(app):
        return
    ident = etags.identity()
    if ident is not None and response.status_code == 200 and \
            flask.request.method in ('GET', 'HEAD'):
        try:
            current = _etag(app, ident)
        except error.FishyError:
            current = None
        if current is not None:
            etags.tag(response, current)
    responses.finish(response)


def _editor(edit):
    """An ``after`` handler applying ``edit(body)`` for plugin drivers."""
    def after(app, response):
        if plugin_driver(app):
            body_mod.rewrite(response, edit)
    return after


service_root_body = _editor(root.edit)
chassis_body = _editor(chassis.edit_chassis)
thermal_body = _editor(chassis.edit_thermal)
certificate_service_body = _editor(services.edit_certificate_service)


def processors_body(app, response):
    """The collection's own URI, without sushy-tools' trailing ``/``."""
    def edit(body):
        body['@odata.id'] = flask.request.path.rstrip('/')
        return True
    _editor(edit)(app, response)


def patch_manager(app, identity):
    """A Manager PATCH outside the full feature set is a 405."""
    if plugin_driver(app) and app.feature_set != 'full':
        raise messages.RedfishError(
            'OperationNotAllowed', code=405, headers={'Allow': 'GET, HEAD'},
            detail='Managers are read-only in the %r feature set'
            % app.feature_set)


def not_offered(app, **view_args):
    """UpdateService and TaskService: 404 for plugin drivers."""
    if plugin_driver(app):
        services.not_offered(app)


def _memory_driver(identity):
    app = flask.current_app
    systems = systems_driver(app, 'get_memory_mib')
    if systems is None or app.feature_set != 'full' or \
            api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    return systems


@blueprint.route('/redfish/v1/Systems/<identity>/Memory')
def memory_collection(identity):
    """The guest memory as a MemoryCollection (:mod:`.redfish.memory`)."""
    mib = _memory_driver(identity).get_memory_mib(identity)
    return flask.jsonify(memory.collection(identity, mib))


@blueprint.route('/redfish/v1/Systems/<identity>/Memory/<memory_id>')
def memory_resource(identity, memory_id):
    mib = _memory_driver(identity).get_memory_mib(identity)
    if memory_id != memory.MEMBER or not mib:
        raise error.NotFound()
    return flask.jsonify(memory.resource(identity, mib))


def session_store(app):
    """The plugin driver's session store, else None."""
    systems = systems_driver(app, 'sessions')
    return systems.sessions() if systems is not None else None


def _sessions():
    store = session_store(flask.current_app)
    if store is None:
        raise error.NotFound('No sessions: the configured systems driver '
                             'offers none')
    return store


@blueprint.route(root.SESSION_SERVICE)
def session_service():
    """The SessionService (:mod:`.redfish.sessions`)."""
    return flask.jsonify(sessions.service(_sessions().timeout,
                                          root.SESSIONS))


def _login(store):
    app = flask.current_app
    body = json_body()
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
    if auth_file and not auth.verify(
            auth_file, user, password.encode('utf-8', 'surrogatepass'),
            store.lockout):
        app.logger.info('Login refused for user %r', user)
        raise messages.RedfishError(
            'NoValidSession', code=401, detail='Incorrect user name or '
            'password', headers={'WWW-Authenticate': auth.CHALLENGE})
    session, token = store.create(user)
    app.logger.info('Session %s created for user %r', session.id, user)
    location = '%s/%s' % (root.SESSIONS, session.id)
    response = flask.jsonify(sessions.resource(session, root.SESSIONS))
    response.status_code = 201
    response.headers['Location'] = location
    response.headers['X-Auth-Token'] = token
    return response


def _requester():
    """The authenticated user of the request; None without an auth file."""
    return flask.request.environ.get(auth.USER_KEY)


@blueprint.route(root.SESSIONS, methods=['GET', 'POST'])
@errormap.translate
def session_collection():
    """GET: the requester's live sessions; POST: log in."""
    store = _sessions()
    if flask.request.method == 'POST':
        return _login(store)
    return flask.jsonify(sessions.collection(store.list(_requester()),
                                             root.SESSIONS))


@blueprint.route(root.SESSIONS + '/<session_id>', methods=['GET', 'DELETE'])
@errormap.translate
def session_resource(session_id):
    """GET: one session; DELETE: log it out, for every worker at once.

    Only the owner's: another user's session is a 404, as one that does
    not exist.
    """
    store = _sessions()
    session = store.get(session_id, _requester())
    if session is None:
        raise error.NotFound()
    if flask.request.method == 'DELETE':
        if not store.delete(session_id):
            raise error.NotFound()
        flask.current_app.logger.info('Session %s deleted', session_id)
        return flask.Response(status=204)
    return flask.jsonify(sessions.resource(session, root.SESSIONS))


@blueprint.route(root.ACCOUNT_SERVICE)
def account_service():
    """The lockout policy (:mod:`.redfish.lockout`), read-only."""
    return flask.jsonify(sessions.account_service(
        _sessions().policy.lockout_policy))


def _error_response(exc, code):
    response = flask.Response(
        json.dumps(messages.body(exc, code)), status=code,
        content_type='application/json')
    headers = getattr(exc, 'headers', None) or {}
    if isinstance(exc, exceptions.HTTPException):
        headers = dict(exc.get_headers())
        headers.pop('Content-Type', None)
    response.headers.update(headers)
    return response


def _limit_body(request):
    if (request.content_length or 0) > MAX_BODY:
        raise exceptions.RequestEntityTooLarge(
            'The request body is larger than %d bytes' % MAX_BODY)
    try:
        # Flask 3.1+: also bounds chunked bodies without Content-Length.
        request.max_content_length = MAX_BODY
    except AttributeError:
        pass


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
    """A body that is not JSON is a 400 MalformedJSON, for every view."""

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


def install(app, key, points, stock_error_handler):
    """Add the hooks for ``points`` to ``app``.

    :param key: the config key that names the systems driver.
    :param stock_error_handler: a function returning sushy-tools' error
        handler (``main.py`` defines it after the first hook point).
    """
    befores = {(point.name, method): point.before for point in points
               if point.before for method in point.methods}
    afters = {point.name: point.after for point in points
              if point.after and point.name != EVERY}
    every_before = [p.before for p in points if p.name == EVERY and p.before]
    every_after = [p.after for p in points if p.name == EVERY and p.after]

    def before_request():
        request = flask.request
        if app.config.get(key):
            _limit_body(request)
            # Each process joins the event sender election at its first
            # request (gunicorn forks after import: no thread before).
            event_service_of(app)
        for handler in every_before:
            response = handler(app, **(request.view_args or {}))
            if response is not None:
                return response
        handler = befores.get((request.endpoint, request.method))
        if handler is not None:
            return handler(app, **request.view_args)
        return None

    def after_request(response):
        request = flask.request
        handler = afters.get(request.endpoint)
        if (handler is not None and request.method == 'GET'
                and response.status_code == 200):
            handler(app, response)
        for handler in every_after:
            response = handler(app, response) or response
        return response

    def handle_error(exc):
        if (not app.config.get(key)
                or isinstance(exc, error.AliasAccessError)):
            return stock_error_handler()(exc)
        code = getattr(exc, 'code', None) or 500
        app.logger.debug('Request failed with %s: %s',
                         type(exc).__name__, exc)
        return _error_response(exc, code)

    app.logger.addFilter(RedactCredentials())
    app.json = JSONProvider(app)
    app.request_class = Request
    app.before_request(before_request)
    app.after_request(after_request)
    app.register_error_handler(error.FishyError, handle_error)
    app.register_error_handler(exceptions.HTTPException, handle_error)
    flask.Flask.register_blueprint(app, blueprint)
