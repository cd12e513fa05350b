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


class _Pairs(list):
    """A JSON object as decoded: its (key, value) pairs, in order."""


def _dedup(value, path, duplicates):
    """``value`` with objects as dicts; repeated keys go to duplicates."""
    if isinstance(value, _Pairs):
        out = {}
        for key, item in value:
            sub = '%s.%s' % (path, key) if path else key
            if key in out:
                duplicates.append(sub)
            out[key] = _dedup(item, sub, duplicates)
        return out
    if isinstance(value, list):
        return [_dedup(v, '%s[%d]' % (path, i), duplicates)
                for i, v in enumerate(value)]
    return value


def json_body(body, duplicates=None):
    """The JSON object in a request body; 400 if it is not one.

    Repeated keys (the last one wins) are appended to ``duplicates`` as
    paths (``spec.runStrategy``), for ``fieldValidation``.
    """
    found = []
    try:
        obj = _dedup(json.loads(body or b'{}', object_pairs_hook=_Pairs),
                     '', found)
        if duplicates is not None:
            duplicates.extend(found)
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
