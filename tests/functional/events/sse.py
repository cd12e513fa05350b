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

"""A Server-Sent Events client over requests (``stream=True``)."""

import json
import queue
import threading
import time

import requests

URI = '/redfish/v1/EventService/SSE'


class Stream:
    """An open event stream; its events are read by a thread."""

    def __init__(self, url, session=None, **kwargs):
        kwargs.setdefault('timeout', (5, 60))
        self.response = (session or requests).get(url + URI, stream=True,
                                                  **kwargs)
        self.events = queue.Queue()
        self.comments = 0
        if self.response.status_code == 200:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        fields = {}
        try:
            for line in self.response.iter_lines(chunk_size=None,
                                                 decode_unicode=True):
                if not line:
                    if 'data' in fields:
                        self.events.put(fields)
                    fields = {}
                elif line.startswith(':'):
                    self.comments += 1
                else:
                    name, _, value = line.partition(':')
                    fields[name] = value[1:] if value[:1] == ' ' else value
        except (requests.RequestException, AttributeError, ValueError):
            pass   # closed

    def next(self, predicate=lambda event: True, timeout=20.0):
        """``(id, Event body)`` of the next event whose record passes."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError('no matching event in %ss' % timeout)
            try:
                fields = self.events.get(timeout=left)
            except queue.Empty:
                continue
            body = json.loads(fields['data'])
            if predicate(body['Events'][0]):
                return fields.get('id'), body

    def close(self):
        self.response.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def about(path, message):
    """A predicate: an event record of ``message`` about ``path``."""
    return lambda record: (
        record['OriginOfCondition']['@odata.id'] == path
        and record['MessageId'].endswith('.' + message))
