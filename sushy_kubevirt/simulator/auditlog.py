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

"""A real kube-apiserver's audit log, read as the simulator's request log.

:class:`AuditLog` reads the JSON lines that
``sushy_kubevirt.controlplane.audit.POLICY`` makes into entries with the
keys of :class:`~sushy_kubevirt.simulator.requestlog.RequestLog` (method,
path, query, verb, group, resource - ``plural/subresource`` for a
subresource -, namespace, name, status, started, duration, user), so that
a test counts the API calls a client made on either backend: on the real
one from the server's own record.
"""

import datetime
import json
import threading
import urllib.parse

from sushy_kubevirt.simulator import requestlog

_METHODS = {'get': 'GET', 'list': 'GET', 'watch': 'GET', 'create': 'POST',
            'update': 'PUT', 'patch': 'PATCH', 'delete': 'DELETE',
            'deletecollection': 'DELETE'}


def _epoch(stamp):
    return datetime.datetime.fromisoformat(
        stamp.replace('Z', '+00:00')).timestamp()


def entry(event):
    """A request-log entry for one audit event."""
    uri = urllib.parse.urlsplit(event.get('requestURI', ''))
    ref = event.get('objectRef') or {}
    started = _epoch(event['requestReceivedTimestamp'])
    return {
        'method': _METHODS.get(event.get('verb'), event.get('verb')),
        'path': uri.path,
        'query': dict(urllib.parse.parse_qsl(uri.query,
                                             keep_blank_values=True)),
        'verb': event.get('verb'),
        'group': ref.get('apiGroup', ''),
        'resource': '/'.join(filter(None, (ref.get('resource'),
                                           ref.get('subresource')))) or None,
        'namespace': ref.get('namespace'),
        'name': ref.get('name'),
        'status': (event.get('responseStatus') or {}).get('code'),
        'started': started,
        'duration': _epoch(event['stageTimestamp']) - started,
        'user': (event.get('user') or {}).get('username'),
    }


class AuditLog(requestlog.RequestLog):
    """The requests of ``users`` (all if None) the audit log recorded."""

    def __init__(self, path, users=None):
        super().__init__()
        self.path = path
        self.users = None if users is None else set(users)
        self._offset = 0
        self._read_lock = threading.Lock()

    def _read(self):
        with self._read_lock:
            try:
                with open(self.path, 'rb') as stream:
                    stream.seek(self._offset)
                    data = stream.read()
            except FileNotFoundError:
                return
            end = data.rfind(b'\n') + 1
            self._offset += end
            for line in data[:end].splitlines():
                event = json.loads(line)
                user = (event.get('user') or {}).get('username')
                if self.users is None or user in self.users:
                    self.record(entry(event))

    def entries(self, **filters):
        self._read()
        return super().entries(**filters)

    def counters(self):
        self._read()
        return super().counters()

    def clear(self):
        self._read()
        super().clear()
