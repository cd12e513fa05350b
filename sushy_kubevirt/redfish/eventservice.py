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

"""The EventService, its subscriptions and SubmitTestEvent.

Served when the systems driver has an EventService
(``SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE``; see
:mod:`sushy_kubevirt.events`): the subscriptions are kept in Kubernetes,
so every worker and replica answers the same.

A subscription belongs to the user who created it: another user's is a
404, as one that does not exist, except to an account that may
configure users or the manager. Its owner gets the events of the
namespaces their account reaches (:mod:`sushy_kubevirt.events.service`).
"""

import dataclasses
import datetime
import json
import uuid

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.drivers import context
from sushy_kubevirt.events import subscriptions
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody

EVENT_SERVICE = '/redfish/v1/EventService'
#: The event stream (:mod:`.sse`).
SERVER_SENT_EVENTS = EVENT_SERVICE + '/SSE'
_TEST_EVENT = 'EventService.SubmitTestEvent'
_TEST_EVENT_URI = EVENT_SERVICE + '/Actions/' + _TEST_EVENT
_TEST_EVENT_KEYS = {'MessageId': str, 'Message': str, 'MessageArgs': list,
                    'OriginOfCondition': str, 'EventId': str,
                    'EventTimestamp': str, 'Severity': str,
                    'MessageSeverity': str, 'EventGroupId': int,
                    'EventType': str}
_SEVERITIES = ('OK', 'Warning', 'Critical')


def event_service_of(app):
    """The systems driver's EventService, or None when it has none."""
    systems = base.systems_driver(app, 'event_service')
    return systems.event_service() if systems is not None else None


def _events():
    service = event_service_of(flask.current_app)
    if service is None:
        raise error.NotFound('No EventService: set '
                             'SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE')
    return service


def root_link(app, response):
    """The service root links the EventService when there is one."""
    if event_service_of(app) is None:
        return
    jsonbody.rewrite(response, lambda body: body.update(
        EventService={'@odata.id': EVENT_SERVICE}) or True)


@base.route(EVENT_SERVICE, GET=privileges.LOGIN)
def event_service():
    s = _events().settings
    return base.json_response({
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
        'ServerSentEventUri': SERVER_SENT_EVENTS,
        'Actions': {'#' + _TEST_EVENT: {'target': _TEST_EVENT_URI}},
    })


def _user():
    return flask.request.environ.get(auth.USER_KEY) or ''


def _visible(sub):
    return access.may_manage_others() or sub.owner == _user()


def _subscription(service, sub_id):
    sub = service.store.get(sub_id)
    if not _visible(sub):
        raise error.NotFound('Subscription %s not found' % sub_id)
    return sub


@base.route(subscriptions.COLLECTION, GET=privileges.LOGIN,
            POST=privileges.CONFIGURE_COMPONENTS)
def event_subscriptions():
    service = _events()
    if flask.request.method == 'POST':
        sub = subscriptions.parse(base.json_body(), service.policy(),
                                  service.settings.timeout)
        account = context.current().account
        sub = service.store.create(dataclasses.replace(
            sub, owner=_user(), owner_groups=account.groups if account
            else ()))
        return base.json_response(sub.body(), 201, {
            'Location': '%s/%s' % (subscriptions.COLLECTION, sub.id)})
    subs = [sub for sub in service.store.list() if _visible(sub)]
    return base.json_response({
        '@odata.type': '#EventDestinationCollection.'
                       'EventDestinationCollection',
        '@odata.id': subscriptions.COLLECTION,
        'Name': 'Event Subscriptions',
        'Members@odata.count': len(subs),
        'Members': [{'@odata.id': '%s/%s' % (subscriptions.COLLECTION,
                                             sub.id)} for sub in subs],
    })


@base.route(subscriptions.COLLECTION + '/<sub_id>', GET=privileges.LOGIN,
            DELETE=privileges.CONFIGURE_COMPONENTS)
def event_subscription(sub_id):
    service = _events()
    sub = _subscription(service, sub_id)
    if flask.request.method == 'DELETE':
        service.store.delete(sub.id)
        return flask.Response(status=204)
    return base.json_response(sub.body())


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


@base.route(_TEST_EVENT_URI, POST=privileges.CONFIGURE_MANAGER)
def submit_test_event():
    service = _events()
    record = _test_event(base.json_body())
    service.test_event(record, _where(
        record['OriginOfCondition']['@odata.id']))
    return flask.Response(status=204)


def _where(origin):
    """``(namespace, labels)`` of the VM of the System ``origin`` names.

    ``(None, None)`` when it names (or is under) no System.
    """
    prefix, _, rest = origin.partition('/redfish/v1/Systems/')
    systems = base.systems_driver(flask.current_app, 'find_vm')
    if prefix or not rest or systems is None:
        return None, None
    ident = rest.partition('/')[0]
    for _ in range(2):
        try:
            vm = systems.find_vm(ident)
        except error.AliasAccessError as exc:
            ident = exc.args[0]
            continue
        except error.NotFound:
            return None, None
        return vm['metadata']['namespace'], vm['metadata'].get('labels') or {}
    return None, None
