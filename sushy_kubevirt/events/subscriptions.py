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

"""Event subscriptions: request checks, and one Secret each.

:func:`parse` checks a POST body (a 400 with a Base registry message for
anything wrong, the Destination through the SSRF host policy);
:class:`Store` keeps each subscription as a labelled Secret in the events
namespace, so every worker and replica lists the same ones and a restart
keeps them. ``HttpHeaders`` are stored in the Secret and never shown.
"""

import base64
import dataclasses
import json
import re
import time
import typing
import uuid

from sushy_tools import error

from sushy_kubevirt import errormap
from sushy_kubevirt.events import resourceevent
from sushy_kubevirt import imagecheck
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt import messages

LABEL = 'sushy-kubevirt.io/event-subscription'
SELECTOR = LABEL + '=true'
NAME_PREFIX = 'sushy-event-'
COLLECTION = '/redfish/v1/EventService/Subscriptions'
REGISTRY_PREFIXES = (resourceevent.PREFIX,)
RESOURCE_TYPES = ('ComputerSystem', 'VirtualMedia')
#: DMTF EventType values (deprecated; stored and shown, not a filter).
EVENT_TYPES = ('StatusChange', 'ResourceUpdated', 'ResourceAdded',
               'ResourceRemoved', 'Alert', 'MetricReport', 'Other')
MAX_CONTEXT = 256
#: Limits of ``HttpHeaders``: headers, characters of a name, of a value.
MAX_HEADERS = 16
MAX_HEADER_NAME = 64
MAX_HEADER_VALUE = 4096
#: Header names (lower case) a subscription may not set, besides every
#: ``Proxy-*``: framing and hop-by-hop (RFC 9110 7.6.1, RFC 9112), and
#: ``Content-Type``, which the service sets.
RESERVED_HEADERS = frozenset((
    'host', 'content-length', 'transfer-encoding', 'connection',
    'keep-alive', 'upgrade', 'te', 'trailer', 'content-type'))
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_FORBIDDEN_VALUE = re.compile(r'[\x00-\x08\x0a-\x1f\x7f]')
_KEYS = ('Destination', 'Context', 'Protocol', 'EventFormatType',
         'SubscriptionType', 'RegistryPrefixes', 'ResourceTypes',
         'OriginResources', 'SubordinateResources', 'HttpHeaders',
         'EventTypes')


@dataclasses.dataclass(frozen=True)
class Subscription:
    id: str
    destination: str
    context: str = ''
    registry_prefixes: typing.Tuple[str, ...] = ()
    resource_types: typing.Tuple[str, ...] = ()
    origin_resources: typing.Tuple[str, ...] = ()
    subordinate_resources: bool = False
    event_types: typing.Optional[typing.Tuple[str, ...]] = None
    headers: typing.Tuple[typing.Tuple[str, str], ...] = ()
    #: The user who created it ('' before accounts were kept): only they,
    #: and an Administrator, see it; it gets the events of the namespaces
    #: their account reaches.
    owner: str = ''
    #: The owner's Kubernetes groups, when Kubernetes decides access.
    owner_groups: typing.Tuple[str, ...] = ()
    #: resourceVersion of the Secret: events of later changes are sent.
    since: int = 0

    def body(self):
        """The EventDestination resource (HttpHeaders never shown)."""
        result = {
            '@odata.type': '#EventDestination.v1_9_0.EventDestination',
            '@odata.id': '%s/%s' % (COLLECTION, self.id),
            'Id': self.id,
            'Name': 'Event subscription %s' % self.id,
            'Destination': self.destination,
            'Context': self.context,
            'Protocol': 'Redfish',
            'SubscriptionType': 'RedfishEvent',
            'EventFormatType': 'Event',
            'RegistryPrefixes': list(self.registry_prefixes),
            'ResourceTypes': list(self.resource_types),
            'OriginResources': [{'@odata.id': uri}
                                for uri in self.origin_resources],
            'SubordinateResources': self.subordinate_resources,
            'HttpHeaders': [],
        }
        if self.event_types is not None:
            result['EventTypes'] = list(self.event_types)
        return result

    def wants(self, message_id, origin):
        """Whether an event passes this subscription's filters."""
        if self.registry_prefixes and \
                message_id.split('.')[0] not in self.registry_prefixes:
            return False
        kind = 'VirtualMedia' if '/VirtualMedia/' in origin \
            else 'ComputerSystem'
        if self.resource_types and kind not in self.resource_types:
            return False
        if self.origin_resources:
            return any(origin == uri or (
                self.subordinate_resources
                and origin.startswith(uri.rstrip('/') + '/'))
                for uri in self.origin_resources)
        return True


def _bad(message_id, *args, prop, detail=None):
    return messages.RedfishError(message_id, *args, properties=['/' + prop],
                                 detail=detail)


def _strings(body, name, allowed=None):
    value = body.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str)
                                              for v in value):
        raise _bad('PropertyValueTypeError', json.dumps(value), name,
                   prop=name, detail='%s must be a list of strings' % name)
    for item in value:
        if allowed is not None and item not in allowed:
            raise _bad('PropertyValueNotInList', item, name, prop=name,
                       detail='%s %r is not one of: %s'
                       % (name, item, ', '.join(allowed)))
    return tuple(dict.fromkeys(value))


def _choice(body, name, allowed):
    value = body.get(name, allowed[0])
    if value not in allowed:
        raise _bad('PropertyValueNotInList', value, name, prop=name,
                   detail='%s must be %s' % (name, ' or '.join(allowed)))


def _origins(body):
    value = body.get('OriginResources')
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _bad('PropertyValueTypeError', json.dumps(value),
                   'OriginResources', prop='OriginResources')
    found = []
    for item in value:
        uri = item.get('@odata.id') if isinstance(item, dict) else None
        if not isinstance(uri, str) or not uri.startswith('/redfish/v1/'):
            raise _bad('PropertyValueFormatError', json.dumps(item),
                       'OriginResources', prop='OriginResources',
                       detail='OriginResources holds links: '
                       '{"@odata.id": "/redfish/v1/..."}')
        found.append(uri)
    return tuple(found)


def header_refusal(name, value):
    """Why ``name: value`` may not be sent to a subscriber, or None.

    The framing and hop-by-hop headers are the service's own: a client's
    ``Transfer-Encoding`` beside the service's ``Content-Length`` is
    request smuggling for any proxy in front of the receiver.
    """
    if not isinstance(name, str) or not _TOKEN.match(name):
        return 'header %r has an invalid name' % str(name)[:64]
    if name.lower() in RESERVED_HEADERS or \
            name.lower().startswith('proxy-'):
        return 'header %s is set by the service, not in HttpHeaders' % name
    if not isinstance(value, str) or _FORBIDDEN_VALUE.search(value):
        return 'header %s has an invalid value' % name
    return None


def _headers(body):
    value = body.get('HttpHeaders')
    if value is None:
        return ()
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise _bad('PropertyValueTypeError', 'HttpHeaders', 'HttpHeaders',
                   prop='HttpHeaders')
    found, seen = [], set()
    for item in value:
        if not isinstance(item, dict):
            raise _bad('PropertyValueTypeError', 'HttpHeaders',
                       'HttpHeaders', prop='HttpHeaders',
                       detail='HttpHeaders holds objects of header names '
                       'and string values')
        for name, text in item.items():
            if len(found) == MAX_HEADERS:
                raise _bad('ArraySizeTooLong', 'HttpHeaders', MAX_HEADERS,
                           prop='HttpHeaders', detail='HttpHeaders holds '
                           'at most %d headers' % MAX_HEADERS)
            if len(name) > MAX_HEADER_NAME:
                raise _bad('StringValueTooLong', name[:64] + '...',
                           MAX_HEADER_NAME, prop='HttpHeaders',
                           detail='HttpHeaders: a header name is longer '
                           'than %d characters' % MAX_HEADER_NAME)
            if isinstance(text, str) and len(text) > MAX_HEADER_VALUE:
                # The value is a secret: never echoed.
                raise _bad('StringValueTooLong', '%s: ...' % name,
                           MAX_HEADER_VALUE, prop='HttpHeaders',
                           detail='HttpHeaders: the value of header %s is '
                           'longer than %d characters'
                           % (name, MAX_HEADER_VALUE))
            reason = header_refusal(name, text)
            if reason is None and name.lower() in seen:
                reason = 'header %s is given twice' % name
            if reason:
                raise _bad('PropertyValueFormatError', 'HttpHeaders',
                           'HttpHeaders', prop='HttpHeaders',
                           detail='HttpHeaders: %s' % reason)
            seen.add(name.lower())
            found.append((name, text))
    return tuple(found)


def _destination(value, policy, timeout):
    try:
        url = imageurl.parse(value, 'Destination')
    except imageurl.Invalid as exc:
        raise messages.RedfishError(
            exc.message_id, *exc.message_args, detail=str(exc),
            properties=['/Destination']) from None
    if url.username:
        raise _bad('PropertyValueFormatError', imageurl.shown(value),
                   'Destination', prop='Destination',
                   detail='Destination must not carry credentials; send '
                   'them in HttpHeaders')
    try:
        checked_addresses(url, policy, timeout)
    except imagecheck.Refused as exc:
        raise _bad('PropertyValueFormatError', imageurl.shown(value),
                   'Destination', prop='Destination',
                   detail='Destination refused: %s' % exc) from None
    return url.url


def checked_addresses(url, policy, timeout):
    """The addresses of ``url``'s host, resolved now, the policy approves.

    Delivery connects to these and resolves nothing else, so a name that
    resolves differently a moment later (DNS rebinding) cannot lead it
    elsewhere.

    :raises imagecheck.Refused: the name does not resolve in time, or the
        policy denies the host or one of its addresses.
    """
    addresses = imagecheck.resolve(url.host, url.port,
                                   time.monotonic() + timeout)
    reason = imageurl.refusal(policy, url.host, url.port, addresses)
    if reason:
        raise imagecheck.Refused(reason)
    return addresses


def parse(body, policy, timeout):
    """A new :class:`Subscription` from a POST body.

    :raises messages.RedfishError: 400 naming the property at fault.
    """
    extra = sorted(set(body) - set(_KEYS))
    if extra:
        raise _bad('PropertyUnknown', extra[0], prop=extra[0])
    if 'Destination' not in body:
        raise _bad('PropertyMissing', 'Destination', prop='Destination')
    context = body.get('Context', '')
    if not isinstance(context, str):
        raise _bad('PropertyValueTypeError', json.dumps(context), 'Context',
                   prop='Context')
    if len(context) > MAX_CONTEXT:
        raise _bad('StringValueTooLong', context[:64], MAX_CONTEXT,
                   prop='Context')
    _choice(body, 'Protocol', ('Redfish',))
    _choice(body, 'EventFormatType', ('Event',))
    _choice(body, 'SubscriptionType', ('RedfishEvent',))
    subordinate = body.get('SubordinateResources', False)
    if not isinstance(subordinate, bool):
        raise _bad('PropertyValueTypeError', json.dumps(subordinate),
                   'SubordinateResources', prop='SubordinateResources')
    event_types = _strings(body, 'EventTypes', EVENT_TYPES) \
        if 'EventTypes' in body else None
    return Subscription(
        id=str(uuid.uuid4()),
        destination=_destination(body['Destination'], policy, timeout),
        context=context,
        registry_prefixes=_strings(body, 'RegistryPrefixes',
                                   REGISTRY_PREFIXES),
        resource_types=_strings(body, 'ResourceTypes', RESOURCE_TYPES),
        origin_resources=_origins(body),
        subordinate_resources=subordinate,
        event_types=event_types,
        headers=_headers(body))


def _b64(data):
    return base64.b64encode(json.dumps(data).encode()).decode()


def _secret(sub):
    fields = dataclasses.asdict(sub)
    headers = fields.pop('headers')
    fields.pop('since')
    return {
        'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
        'metadata': {'name': NAME_PREFIX + sub.id,
                     'labels': {LABEL: 'true',
                                'app.kubernetes.io/managed-by':
                                    'sushy-kubevirt'}},
        'data': {'subscription': _b64(fields), 'headers': _b64(headers)},
    }


def _from_secret(secret):
    data = secret.get('data') or {}
    try:
        fields = json.loads(base64.b64decode(data['subscription']))
        headers = json.loads(base64.b64decode(data.get('headers') or 'W10='))
        for name in ('registry_prefixes', 'resource_types',
                     'origin_resources', 'owner_groups'):
            fields[name] = tuple(fields.get(name) or ())
        if fields.get('event_types') is not None:
            fields['event_types'] = tuple(fields['event_types'])
        return Subscription(
            headers=tuple(tuple(h) for h in headers),
            since=int(secret['metadata'].get('resourceVersion') or 0),
            **fields)
    except (KeyError, TypeError, ValueError):
        return None  # not ours, or edited into nonsense: ignored


class Store:
    """The subscriptions of one namespace, read and written live.

    :param limit: most subscriptions :meth:`create` makes; None: no limit.
    """

    def __init__(self, cluster, namespace, limit=None):
        self.cluster = cluster
        self.namespace = namespace
        self.limit = limit

    @errormap.translate
    def list(self):
        return self.read()

    def read(self):
        """Every subscription. :raises apierrors.ApiError:"""
        secrets = self.cluster.list_objects(resources.SECRET, self.namespace,
                                            SELECTOR)
        found = (_from_secret(s) for s in secrets)
        return sorted((s for s in found if s is not None),
                      key=lambda s: (s.since, s.id))

    @errormap.translate
    def get(self, sub_id):
        """:raises sushy_tools.error.NotFound:"""
        try:
            secret = self.cluster.get_object(
                resources.SECRET, self.namespace, NAME_PREFIX + sub_id)
        except apierrors.NotFound:
            secret = None
        sub = _from_secret(secret) if secret and \
            (secret['metadata'].get('labels') or {}).get(LABEL) == 'true' \
            else None
        if sub is None:
            raise error.NotFound('Subscription %s not found' % sub_id)
        return sub

    def _full(self):
        return messages.RedfishError(
            'EventSubscriptionLimitExceeded', code=409,
            detail='There are %d event subscriptions already, the limit '
            '(SUSHY_EMULATOR_KUBEVIRT_EVENTS_MAX_SUBSCRIPTIONS); delete one '
            'first' % self.limit)

    @errormap.translate
    def create(self, sub):
        """Create ``sub``'s Secret, within :attr:`limit`.

        The limit holds across workers and replicas without a lock: after
        its create, a creator lists the subscriptions again (a live list)
        and, when its own ranks past the limit in creation order
        (resourceVersion), deletes it and refuses. Of creators racing for
        the last places the earliest keep them, whoever lists first.

        :raises messages.RedfishError: 409 EventSubscriptionLimitExceeded.
        """
        if self.limit is not None and len(self.read()) >= self.limit:
            raise self._full()
        try:
            secret = self.cluster.create_object(
                resources.SECRET, self.namespace, _secret(sub))
        except apierrors.NotFound as exc:
            raise messages.RedfishError(
                'InternalError', code=500, detail='The events namespace %s '
                'does not exist (SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE)'
                % self.namespace) from exc
        created = _from_secret(secret)
        if self.limit is not None and created.id in [
                s.id for s in self.read()[self.limit:]]:
            try:
                self.cluster.delete_secret(self.namespace,
                                           NAME_PREFIX + created.id)
            except apierrors.NotFound:
                pass
            raise self._full()
        return created

    @errormap.translate
    def delete(self, sub_id):
        """:raises sushy_tools.error.NotFound:"""
        self.get(sub_id)
        try:
            self.cluster.delete_secret(self.namespace, NAME_PREFIX + sub_id)
        except apierrors.NotFound:
            raise error.NotFound('Subscription %s not found'
                                 % sub_id) from None
