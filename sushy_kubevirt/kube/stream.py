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

"""Newline-delimited JSON reader for watch streams."""

import json


class TruncatedStream(Exception):
    """The stream ended in the middle of an event."""


def iter_lines(chunks):
    """Yield each complete, non-blank line of an iterable of byte chunks.

    :raises TruncatedStream: if data is left over after the last newline.
    """
    pending = b''
    for chunk in chunks:
        pending += chunk
        if b'\n' not in chunk:
            continue
        *lines, pending = pending.split(b'\n')
        for line in lines:
            if line.strip():
                yield line
    if pending.strip():
        raise TruncatedStream('stream ended inside an event (%d bytes)'
                              % len(pending))


def iter_events(chunks):
    """Yield each watch event (a dict with ``type`` and ``object``).

    :raises ValueError: on a line that is not a JSON object.
    """
    for line in iter_lines(chunks):
        event = json.loads(line)
        if not isinstance(event, dict):
            raise ValueError('watch event is not an object: %r' % line[:80])
        yield event
