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

"""Wire format: JSON request bodies in; compact JSON and watch lines out."""

import json

from sushy_kubevirt.simulator import apistatus


def compact(doc):
    """Compact JSON text, as kube-apiserver writes it."""
    return json.dumps(doc, separators=(',', ':'))


class JsonCache:
    """JSON text of stored (immutable) objects, cached per object."""

    def __init__(self):
        self._cache = {}

    def dumps(self, obj):
        meta = obj['metadata']
        key = (obj.get('kind'), meta.get('namespace'), meta['name'])
        cached = self._cache.get(key)
        if cached is not None and cached[0] is obj:
            return cached[1]
        text = compact(obj)
        self._cache[key] = (obj, text)
        return text


def json_body(body):
    """The JSON object in a request body; 400 if it is not one."""
    try:
        obj = json.loads(body or b'{}')
    except ValueError as exc:
        raise apistatus.bad_request('the object provided is unrecognized or '
                                    'malformed: %s' % exc)
    if not isinstance(obj, dict):
        raise apistatus.bad_request('the object provided is unrecognized or '
                                    'malformed')
    return obj


def event_line(etype, obj, text=None):
    """One NDJSON watch event; ``text`` is ``obj``'s JSON if known."""
    if text is None:
        text = compact(obj)
    return ('{"type":"%s","object":%s}\n' % (etype, text)).encode()


def chunked(data):
    """``data`` as one HTTP/1.1 chunk."""
    return b'%x\r\n%s\r\n' % (len(data), data)
