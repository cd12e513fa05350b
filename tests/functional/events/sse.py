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
import time

import requests

URI = '/redfish/v1/EventService/SSE'


class Stream:
    """An open event stream, read as :meth:`next` asks."""

    def __init__(self, url, session=None, **kwargs):
        kwargs.setdefault('timeout', (5, 60))
        self.response = (session or requests).get(url + URI, stream=True,
                                                  **kwargs)
        self.comments = 0
        self._lines = self.response.iter_lines(chunk_size=None,
                                               decode_unicode=True)

    def _events(self, deadline):
        """Events as field dicts; stops at the line after ``deadline``.

        The server sends a keepalive comment at least every few seconds,
        so a line arrives to check the deadline against.
        """
        fields = {}
        for line in self._lines:
            if time.monotonic() > deadline:
                return
            if not line:
                if 'data' in fields:
                    yield fields
                fields = {}
            elif line.startswith(':'):
                self.comments += 1
            else:
                name, _, value = line.partition(':')
                fields[name] = value[1:] if value[:1] == ' ' else value

    def next(self, predicate=lambda event: True, timeout=20.0):
        """``(id, Event body)`` of the next event whose record passes."""
        for fields in self._events(time.monotonic() + timeout):
            body = json.loads(fields['data'])
            if predicate(body['Events'][0]):
                return fields.get('id'), body
        raise AssertionError('no matching event in %ss' % timeout)

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
