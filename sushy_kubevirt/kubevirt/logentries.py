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
"""Kubernetes Events as Redfish LogEntries (pure functions, no I/O).

A System's log is the Events whose ``involvedObject`` is its VM, its VMI
(same name) or one of its DataVolumes; the security log is the Events
the emulator writes itself, labelled :data:`LABEL`. ``ClearLog`` writes a
marker Event (reason :data:`CLEARED`, reported by :data:`COMPONENT`): the
entries of a log are the Events newer than its newest marker, marker
included, the newest :data:`MAX_ENTRIES` of them. An Event that counts
more than one occurrence says how many in its entry's message.
"""

import datetime
import hashlib
import re

from sushy_kubevirt.kubevirt import fields

#: The Events' index of their involved object: ``namespace/name``.
INVOLVED = 'involved'
#: The kinds whose Events a System's log shows.
KINDS = ('VirtualMachine', 'VirtualMachineInstance', 'DataVolume')
#: The component reporting the Events the emulator writes.
COMPONENT = 'sushy-kubevirt'
#: The label of the security log's Events (value ``true``).
LABEL = 'sushy-kubevirt.io/security-log'
#: The annotation of a security log Event: the clients it counts.
CLIENTS = 'sushy-kubevirt.io/clients'
#: The reason of the marker a ClearLog writes.
CLEARED = 'RedfishLogCleared'
#: Most entries a log shows (the newest).
MAX_ENTRIES = 1000
#: Security log reasons: ``{reason: Kubernetes Event type}``.
SECURITY = {'SessionCreated': 'Normal', 'LoginFailed': 'Warning',
            'AccountLockedOut': 'Warning', 'PrivilegeRefused': 'Warning',
            CLEARED: 'Normal'}
#: The MessageId prefix of an Event's reason (no registry is served).
MESSAGE_PREFIX = 'KubernetesEvent.1.0.'
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def slim(event):
    """The fields of an Event a LogEntry needs (the cache keeps these)."""
    meta = event.get('metadata') or {}
    kept = {k: meta[k] for k in ('name', 'namespace', 'uid', 'labels',
                                 'resourceVersion', 'creationTimestamp')
            if k in meta}
    clients = (meta.get('annotations') or {}).get(CLIENTS)
    if clients is not None:
        kept['annotations'] = {CLIENTS: clients}
    involved = event.get('involvedObject') or {}
    body = {k: event[k] for k in ('reason', 'message', 'type', 'eventTime',
                                  'lastTimestamp', 'firstTimestamp',
                                  'reportingComponent', 'count')
            if event.get(k) is not None}
    body['metadata'] = kept
    body['involvedObject'] = {k: involved[k] for k in (
        'kind', 'name', 'namespace') if k in involved}
    component = fields.get(event, 'source', 'component')
    if component:
        body['source'] = {'component': component}
    series = {k: v for k, v in (event.get('series') or {}).items()
              if k in ('lastObservedTime', 'count')}
    if series:
        body['series'] = series
    return body


def about_system(event):
    """Whether ``event`` may be a System's: about a kind of :data:`KINDS`."""
    return (event.get('involvedObject') or {}).get('kind') in KINDS


def involved_key(event):
    """``[namespace/name]`` of the Event's involved object (the index)."""
    involved = event.get('involvedObject') or {}
    namespace = involved.get('namespace') or \
        (event.get('metadata') or {}).get('namespace')
    return ['%s/%s' % (namespace, involved.get('name'))]


def system_objects(vm):
    """``{(kind, name)}`` of the objects whose Events are ``vm``'s.

    The VM, its VMI (same name) and the DataVolumes its volumes and
    templates name (virtual media included: their volumes name them).
    """
    name = vm['metadata']['name']
    found = {('VirtualMachine', name), ('VirtualMachineInstance', name)}
    for volume in fields.volumes(vm):
        dv = fields.get(volume, 'dataVolume', 'name')
        if dv:
            found.add(('DataVolume', dv))
    for template in fields.get(vm, 'spec', 'dataVolumeTemplates') or ():
        dv = fields.get(template, 'metadata', 'name')
        if dv:
            found.add(('DataVolume', dv))
    return found


def of_system(events, objects):
    """The Events of ``events`` whose involved object is in ``objects``."""
    return [e for e in events
            if ((e.get('involvedObject') or {}).get('kind'),
                (e.get('involvedObject') or {}).get('name')) in objects]


def _parse(text):
    try:
        parsed = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    except (AttributeError, ValueError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(
        tzinfo=datetime.timezone.utc)


def when(event):
    """When the Event last happened: an aware datetime (epoch if unknown).

    Its series' last observation, else ``lastTimestamp``, ``eventTime``,
    ``firstTimestamp``, then its creation.
    """
    for text in (fields.get(event, 'series', 'lastObservedTime'),
                 event.get('lastTimestamp'), event.get('eventTime'),
                 event.get('firstTimestamp'),
                 fields.get(event, 'metadata', 'creationTimestamp')):
        parsed = _parse(text) if text else None
        if parsed is not None:
            return parsed
    return _EPOCH


def _second(event):
    """:func:`when`, to the second (most Events' timestamps' resolution)."""
    return when(event).replace(microsecond=0)


def _written(event):
    """The Event's resourceVersion as a number (0 if it is none).

    The API server's order of writes: within one second, the true order
    of Events that a timestamp cannot tell apart.
    """
    version = fields.get(event, 'metadata', 'resourceVersion') or ''
    return int(version) if version.isdigit() else 0


def _order(event):
    """Sort key: :func:`when` to the second, then the write, then the Id."""
    return _second(event), _written(event), entry_id(event)


def iso(moment):
    """``moment`` in ISO 8601 with its offset (``+00:00``), to seconds."""
    return moment.astimezone(datetime.timezone.utc).isoformat(
        timespec='seconds')


def is_marker(event):
    """Whether ``event`` is a ClearLog marker the emulator wrote."""
    return event.get('reason') == CLEARED and COMPONENT in (
        event.get('reportingComponent'),
        fields.get(event, 'source', 'component'))


def visible(events, limit=MAX_ENTRIES):
    """The Events a log shows, oldest first, the newest ``limit`` of them.

    In :func:`_order`: Events of one second in the order they were
    written, whatever their uids. After a ClearLog, its newest marker and
    the Events of a later second: timestamps have a one-second
    resolution, so an Event of the marker's second is taken as cleared.
    """
    ordered = sorted(events, key=_order)
    markers = [e for e in ordered if is_marker(e)]
    if markers:
        cleared = _second(markers[-1])
        ordered = [markers[-1]] + [e for e in ordered
                                   if _second(e) > cleared]
    return ordered[-limit:] if limit else []


def entry_id(event):
    """The LogEntry Id: the Event's uid (stable across restarts)."""
    meta = event.get('metadata') or {}
    return meta.get('uid') or meta.get('name') or ''


def severity(event):
    """``Warning`` for a Warning Event, else ``OK``."""
    return 'Warning' if event.get('type') == 'Warning' else 'OK'


def count(event):
    """How many occurrences the Event counts: its series', else its own."""
    for value in (fields.get(event, 'series', 'count'), event.get('count')):
        if isinstance(value, int) and not isinstance(value, bool) and \
                value > 0:
            return value
    return 1


def _occurrences(event, times):
    words = ['%d times' % times]
    clients = (fields.get(event, 'metadata', 'annotations') or {}).get(
        CLIENTS) or ''
    if clients.isdigit():
        words.append('from %s client%s' % (clients, '' if clients == '1'
                                           else 's'))
    first = _parse(event.get('firstTimestamp'))
    if first is not None:
        words.append('since ' + iso(first))
    return ' '.join(words)


def message(event):
    """``reason: message`` (either alone when the other is empty).

    An Event of several occurrences adds ``(N times from C clients since
    <its first>)``, the clients only where the emulator counted them.
    """
    parts = [p for p in (event.get('reason'), event.get('message')) if p]
    text = ': '.join(parts)
    times = count(event)
    return text + ' (%s)' % _occurrences(event, times) if times > 1 \
        else text


def message_id(event):
    """``KubernetesEvent.1.0.<reason>``, the reason's letters and digits."""
    return MESSAGE_PREFIX + (re.sub('[^A-Za-z0-9]', '', event.get(
        'reason') or '') or 'Unknown')


def entry(event, collection, origin=None):
    """The LogEntry of ``event`` in Entries collection ``collection``.

    :param origin: the ``@odata.id`` of the resource it is about.
    """
    ident = entry_id(event)
    body = {
        '@odata.type': '#LogEntry.v1_4_0.LogEntry',
        '@odata.id': '%s/%s' % (collection, ident),
        'Id': ident,
        'Name': 'Log Entry %s' % ident,
        'EntryType': 'Event',
        'Severity': severity(event),
        'Created': iso(when(event)),
        'Message': message(event),
        'MessageId': message_id(event),
    }
    if origin:
        body['Links'] = {'OriginOfCondition': {'@odata.id': origin}}
    return body


def _name_stamp(moment):
    return moment.strftime('%Y%m%d%H%M%S%f')


def _stamp(moment):
    return iso(moment).replace('+00:00', 'Z')


def aggregate_name(involved_name, reason, account, window):
    """The name of the Event counting ``reason`` for ``account``.

    :param window: an aware datetime, the start of the window it counts:
        any process derives the same name for the same three.
    """
    digest = hashlib.sha256(('%s\0%s' % (reason, account)).encode(
        'utf-8', 'surrogatepass')).hexdigest()[:16]
    return '%s.%s.%s' % (involved_name[:200],
                         window.astimezone(datetime.timezone.utc).strftime(
                             '%Y%m%d%H%M'), digest)


def counted(body, name, first, times, clients):
    """``body`` (:func:`record`, at the last occurrence) as Event ``name``.

    It counts ``times`` occurrences since ``first`` (an aware datetime)
    from ``clients`` distinct clients.
    """
    meta = {k: v for k, v in body['metadata'].items()
            if k != 'generateName'}
    meta.update(name=name, annotations={CLIENTS: str(clients)})
    return dict(body, metadata=meta, count=times,
                firstTimestamp=_stamp(first))


def recount(event, times, clients, last):
    """The JSON patch adding occurrences to ``event`` (as last read).

    ``times`` occurrences from ``clients`` more clients, the last at
    ``last`` (an aware datetime; the Event's own time if later). It tests
    the resourceVersion read: it applies only if no one wrote since.
    """
    annotations = fields.get(event, 'metadata', 'annotations') or {}
    before = annotations.get(CLIENTS) or ''
    total = str((int(before) if before.isdigit() else 0) + clients)
    operations = [
        {'op': 'test', 'path': '/metadata/resourceVersion',
         'value': event['metadata']['resourceVersion']},
        {'op': 'add', 'path': '/count',
         'value': (event.get('count') or 0) + times},
        {'op': 'add', 'path': '/lastTimestamp',
         'value': _stamp(max(when(event), last))}]
    if annotations:
        operations.append({'op': 'add', 'path': '/metadata/annotations/'
                           + CLIENTS.replace('~', '~0').replace('/', '~1'),
                           'value': total})
    else:
        operations.append({'op': 'add', 'path': '/metadata/annotations',
                           'value': {CLIENTS: total}})
    return operations


def record(namespace, involved, reason, text, now, instance='',
           labels=None):
    """The body of an Event the emulator writes (to POST).

    :param involved: its ``involvedObject`` (kind, name, namespace...).
    :param now: an aware datetime: its time.
    :param instance: ``reportingInstance`` (e.g. the host and process).
    """
    stamp = _stamp(now)
    meta = {'generateName': '%s.%s.' % (
        (involved.get('name') or COMPONENT)[:200], _name_stamp(now)),
        'namespace': namespace}
    if labels:
        meta['labels'] = dict(labels)
    return {
        'apiVersion': 'v1', 'kind': 'Event', 'metadata': meta,
        'involvedObject': dict(involved),
        'reason': reason, 'message': text[:1024],
        'type': SECURITY.get(reason, 'Normal'),
        'source': {'component': COMPONENT},
        'reportingComponent': COMPONENT,
        'reportingInstance': instance[:128],
        'firstTimestamp': stamp, 'lastTimestamp': stamp,
        'action': reason, 'count': 1,
    }
