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

"""The EventService's Server-Sent Events stream (``ServerSentEventUri``).

Each process streams the events of its own watch cache, the ones its
subscriptions get (:meth:`~sushy_kubevirt.events.service.EventService.
listen`), whether or not it holds the sender Lease: each event an ``id:``
(its ``EventId``) and a ``data:`` line (a Redfish ``Event``). A client
that reconnects with ``Last-Event-ID`` first gets the buffered events
after that one. ``$filter`` keeps the events matching ``MessageId``,
``RegistryPrefix``, ``OriginResource``, ``ResourceType`` terms joined by
``or`` (and ``and``); the stream carries only the events of Systems the
account reaches, as checked for a subscription's owner.

Bounded (:mod:`~sushy_kubevirt.redfish.capacity`): at most
``SUSHY_EMULATOR_KUBEVIRT_EVENTS_SSE_STREAMS`` streams per process, fewer
than its server threads, and ``..._SSE_STREAMS_PER_ACCOUNT`` of one
account (a 503 with ``Retry-After`` beyond), a keepalive comment every
:data:`KEEPALIVE` seconds; a client that hangs up is noticed within
:data:`HANGUP_POLL` seconds (its end of the connection, polled), or at the
next keepalive when the server does not tell the socket; a stream
whose client reads too slowly (:data:`QUEUE` events behind) or reads
nothing for ``..._SSE_SEND_TIMEOUT`` seconds while the connection's send
buffer is full ends, to be resumed with ``Last-Event-ID``. Each stream
holds one server thread.
"""

import atexit
import json
import logging
import queue
import re
import select
import socket
import threading
import time
import types

import flask

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.drivers import context
from sushy_kubevirt.events import delivery
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import capacity
from sushy_kubevirt.redfish import eventservice
from sushy_kubevirt.redfish import query

URI = eventservice.SERVER_SENT_EVENTS
MEDIA_TYPE = 'text/event-stream'
#: Seconds between keepalive comments.
KEEPALIVE = 15.0
#: Seconds between two checks that the client is still connected.
HANGUP_POLL = 1.0
#: Events waiting for a slow client before its stream ends.
QUEUE = 1000
_RETRY_AFTER = 5
_TERM = re.compile(r"^\s*(\w+)\s+eq\s+(?:'([^']*)'|(\S+))\s*$")
_PROPERTIES = ('MessageId', 'RegistryPrefix', 'OriginResource',
               'ResourceType', 'EventFormatType', 'SubordinateResources')
LOG = logging.getLogger(__name__)
#: A :class:`capacity.Limit` per (streams, streams per account) setting.
_limits = {}
_limits_lock = threading.Lock()
#: Set when the process stops: every stream ends.
stopping = threading.Event()
query.exempt(URI)
atexit.register(stopping.set)


def _bad_filter(text, detail):
    return messages.RedfishError(
        'QueryParameterValueFormatError', text, '$filter',
        detail='$filter %r: %s' % (text, detail))


def parse_filter(text):
    """``$filter`` as a list of alternatives, each a list of terms.

    A term is ``(property, value)``; an event passes when every term of
    one alternative matches it.
    """
    if text is None:
        return None
    alternatives = []
    for alternative in re.split(r'\s+or\s+', text.strip()):
        terms = []
        for term in re.split(r'\s+and\s+', alternative):
            found = _TERM.match(term)
            if found is None:
                raise _bad_filter(text, "expected Property eq 'value' terms "
                                  'joined by or/and')
            name, value = found.group(1), found.group(2) or found.group(3)
            if name not in _PROPERTIES:
                raise _bad_filter(text, 'filters on %s only'
                                  % ', '.join(_PROPERTIES))
            terms.append((name, value))
        alternatives.append(terms)
    return alternatives


def _matches(name, value, record, subordinate):
    message_id = record['MessageId']
    origin = record['OriginOfCondition']['@odata.id']
    if name == 'MessageId':
        parts = message_id.split('.')
        return value in (message_id, '%s.%s' % (parts[0], parts[-1]))
    if name == 'RegistryPrefix':
        return message_id.split('.')[0] == value
    if name == 'OriginResource':
        return origin == value or (
            subordinate and origin.startswith(value.rstrip('/') + '/'))
    if name == 'ResourceType':
        kind = 'VirtualMedia' if '/VirtualMedia/' in origin \
            else 'ComputerSystem'
        return kind == value
    if name == 'EventFormatType':
        return value == 'Event'
    return True   # SubordinateResources: a modifier


def wanted(alternatives, record):
    """Whether ``record`` passes a parsed ``$filter`` (None: all do)."""
    if alternatives is None:
        return True
    for terms in alternatives:
        subordinate = ('SubordinateResources', 'true') in terms
        if all(_matches(name, value, record, subordinate)
               for name, value in terms):
            return True
    return False


def _key(text):
    try:
        rv, rank = text.split('.')
        return int(rv), int(rank)
    except (AttributeError, ValueError):
        return None


def _message(record):
    body = {'@odata.type': delivery.EVENT_TYPE, 'Id': record['EventId'],
            'Name': 'Event', 'Context': '', 'Events': [record]}
    return 'id: %s\ndata: %s\n\n' % (record['EventId'], json.dumps(body))


def _limit(settings):
    key = (settings.sse_streams, settings.sse_streams_per_account)
    with _limits_lock:
        return _limits.setdefault(key, capacity.Limit(
            'event streams', *key, retry_after=_RETRY_AFTER))


def _writable(sock, timeout):
    """Whether ``sock`` takes more bytes within ``timeout`` seconds."""
    poller = select.poll()
    try:
        poller.register(sock, select.POLLOUT)
    except ValueError:   # closed
        return True
    return bool(poller.poll(timeout * 1000))


def _hung_up(sock):
    """Whether the client closed its end of ``sock`` (or it is closed).

    Polled, never read: the client's shutdown (``POLLRDHUP``), a hang-up
    or an error on the connection.
    """
    if sock is None:
        return False
    poller = select.poll()
    try:
        poller.register(sock, select.POLLRDHUP)
    except ValueError:   # closed
        return True
    return any(mask & (select.POLLRDHUP | select.POLLHUP | select.POLLERR)
               for _, mask in poller.poll(0))


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _sent(chunks, sock, timeout):
    """``chunks``, ended when the client read nothing for ``timeout`` s.

    A write the client does not read would hold the thread for good
    once the connection's buffers are full, and so would the server's
    last chunk after the stream ends: the connection is shut down
    instead, which ends the server's writes too.
    """
    try:
        for chunk in chunks:
            if sock is not None and not _writable(sock, timeout):
                LOG.warning('Event stream ended: its client read nothing '
                            'for %s s', timeout)
                _shut(sock)
                return
            yield chunk
        if sock is not None and not _writable(sock, timeout):
            _shut(sock)
    finally:
        chunks.close()


def _stream(service, owner, alternatives, since, sock):
    """The events of one stream, until the client or the process goes."""
    events = queue.Queue(QUEUE)

    def listener(key, record, where):
        try:
            events.put_nowait((key, record, where))
        except queue.Full:
            pass   # the stream ends below, the client resumes

    def passes(record, where):
        return wanted(alternatives, record) and service.reaches(owner, where)

    try:
        backlog = service.listen(listener)
        yield ': %s\nretry: %d\n\n' % (URI, _RETRY_AFTER * 1000)
        if since is not None:
            for key, record, where in backlog:
                if key > since and passes(record, where):
                    yield _message(record)
        quiet = time.monotonic()
        while not stopping.is_set():
            if events.full():
                LOG.warning('Event stream ended: its client is %d events '
                            'behind', QUEUE)
                return
            try:
                key, record, where = events.get(timeout=HANGUP_POLL)
            except queue.Empty:
                if _hung_up(sock):
                    return
                if time.monotonic() >= quiet + KEEPALIVE:
                    quiet = time.monotonic()
                    yield ': keepalive\n\n'
                continue
            if passes(record, where):
                quiet = time.monotonic()
                yield _message(record)
    finally:
        service.unlisten(listener)


def _accepted(accept):
    """Whether an ``Accept`` header takes the stream (parameters aside)."""
    if not accept:
        return True
    types = {part.split(';')[0].strip().lower() for part in accept.split(',')}
    return bool(types & {MEDIA_TYPE, 'text/*', '*/*'})


@base.route(URI, GET=privileges.LOGIN)
def server_sent_events():
    request = flask.request
    service = eventservice.event_service_of(flask.current_app)
    if service is None:
        raise messages.RedfishError(
            'ResourceNotFound', 'EventService', URI, code=404)
    if not _accepted(request.headers.get('Accept')):
        raise messages.RedfishError(
            'GeneralError', code=406, detail='The event stream is %s; the '
            'request accepts only %s' % (MEDIA_TYPE,
                                         request.headers['Accept']))
    alternatives = parse_filter(request.args.get('$filter'))
    account = context.current().account
    owner = types.SimpleNamespace(
        owner=request.environ.get(auth.USER_KEY) or '',
        owner_groups=account.groups if account else ())
    since = _key(request.headers.get('Last-Event-ID'))
    settings = service.settings
    limit, user = _limit(settings), request.environ.get(auth.USER_KEY)
    limit.acquire(user, capacity.server_threads(request.environ))
    sock = capacity.connection(request.environ)
    response = flask.Response(
        _sent(_stream(service, owner, alternatives, since, sock), sock,
              settings.sse_send_timeout),
        mimetype=MEDIA_TYPE, headers={'X-Accel-Buffering': 'no'})
    response.call_on_close(lambda: limit.release(user))
    return response
