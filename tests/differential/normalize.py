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

"""Normalised answers: what must be equal between two API servers.

Values that differ by nature are replaced by placeholders: uids by
``uid1``, ``uid2``... in order of appearance (so "same owner" survives),
object resourceVersions by ``rv1``, ``rv2``... in order of appearance
(``rv3<`` if older than one seen before), list and bookmark
resourceVersions, which are the server's current revision, by
``<current>`` (``<stale>`` if older than an object seen), timestamps by
``<time>``, generated names by ``<generateName>*``, continue tokens by
``<continue>``. Numbers in messages become their ``rv`` token, or ``<n>``;
several causes are sorted (kube reports schema errors in map order) and
the message lists them by number only.
"""

import re

TIME = re.compile(r'^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$')
UID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                 r'[0-9a-f]{12}')
TIME_IN_TEXT = re.compile(r'\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z')
NUMBER = re.compile(r'\b\d{3,}\b')
# resourceVersions in messages that are the server's, not an object's.
CURRENT = re.compile(r'(current: |too old resource version: \d+ \()\d+')


class Normalizer:
    """Placeholders for one case on one server (tokens are per case)."""

    def __init__(self):
        self.rvs = {}
        self.uids = {}
        self.names = {}
        self.newest = -1

    def rv(self, value):
        """The token of an object's resourceVersion."""
        if not value:
            return value
        if value not in self.rvs:
            token = 'rv%d' % (len(self.rvs) + 1)
            if int(value) < self.newest:
                token += '<'
            self.rvs[value] = token
            self.newest = max(self.newest, int(value))
        return self.rvs[value]

    def current(self, value):
        """A list's or bookmark's resourceVersion (the server's)."""
        if not value:
            return value
        return '<current>' if int(value) >= self.newest else '<stale>'

    def uid(self, value):
        if value not in self.uids:
            self.uids[value] = 'uid%d' % (len(self.uids) + 1)
        return self.uids[value]

    def text(self, value):
        """A message with uids, names and numbers replaced."""
        value = UID.sub(lambda m: self.uid(m.group()), value)
        value = TIME_IN_TEXT.sub('<time>', value)
        value = CURRENT.sub(lambda m: m.group(1) + '<current>', value)
        for name, token in self.names.items():
            value = value.replace(name, token)
        return NUMBER.sub(lambda m: self.rvs.get(m.group(), '<n>'), value)

    def body(self, doc):
        """A response body: an object, a list, a Status or text."""
        if not isinstance(doc, dict):
            return doc
        if doc.get('kind') == 'Status':
            return self.status(doc)
        if isinstance(doc.get('items'), list):
            meta = dict(doc.get('metadata') or {})
            if 'resourceVersion' in meta:
                meta['resourceVersion'] = self.current(
                    meta['resourceVersion'])
            if meta.get('continue'):
                meta['continue'] = '<continue>'
            return dict(doc, metadata=meta,
                        items=[self.object(o) for o in doc['items']])
        return self.object(doc)

    def status(self, doc):
        doc = self.generic(doc)
        if isinstance(doc.get('message'), str):
            doc['message'] = self.text(doc['message'])
        details = doc.get('details')
        if isinstance(details, dict):
            causes = details.get('causes') or []
            for cause in causes:
                if isinstance(cause.get('message'), str):
                    cause['message'] = self.text(cause['message'])
            if len(causes) > 1:
                # kube-openapi reports schema errors in map order.
                causes.sort(key=lambda c: (c.get('field', ''),
                                           c.get('message', '')))
                head = doc.get('message', '').split(': [', 1)[0]
                doc['message'] = head + ': [%d causes]' % len(causes)
            if details.get('uid'):
                details['uid'] = self.uid(details['uid'])
            if details.get('name') in self.names:
                details['name'] = self.names[details['name']]
        meta = doc.get('metadata') or {}
        if meta.get('continue'):
            meta['continue'] = '<continue>'
        return doc

    def object(self, obj):
        obj = self.generic(obj)
        meta = obj.get('metadata')
        if not isinstance(meta, dict):
            return obj
        generate = meta.get('generateName')
        name = meta.get('name') or ''
        if generate and name.startswith(generate) and name != generate:
            self.names.setdefault(name, generate + '*')
            meta['name'] = self.names[name]
        if meta.get('uid'):
            meta['uid'] = self.uid(meta['uid'])
        if meta.get('resourceVersion'):
            meta['resourceVersion'] = self.rv(meta['resourceVersion'])
        for ref in meta.get('ownerReferences') or ():
            if ref.get('uid'):
                ref['uid'] = self.uid(ref['uid'])
        return obj

    def event(self, event):
        """A watch event: BOOKMARKs carry the server's resourceVersion."""
        obj = event.get('object')
        if event.get('type') == 'BOOKMARK' and isinstance(obj, dict):
            obj = self.generic(obj)
            meta = obj.setdefault('metadata', {})
            meta['resourceVersion'] = self.current(
                meta.get('resourceVersion'))
            return {'type': 'BOOKMARK', 'object': obj}
        if event.get('type') == 'ERROR':
            return {'type': 'ERROR', 'object': self.status(obj)}
        return {'type': event.get('type'), 'object': self.object(obj)}

    def generic(self, value):
        """A copy with timestamps (and uids in keys) replaced everywhere."""
        if isinstance(value, dict):
            return {UID.sub(lambda m: self.uid(m.group()), k):
                    self.generic(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.generic(v) for v in value]
        if isinstance(value, str) and TIME.match(value):
            return '<time>'
        return value


def differences(left, right, path=''):
    """``[(path, left value, right value)]`` where the two differ."""
    if isinstance(left, dict) and isinstance(right, dict):
        found = []
        for key in list(left) + [k for k in right if k not in left]:
            sub = '%s.%s' % (path, key) if path else str(key)
            if key not in left:
                found.append((sub, '<absent>', right[key]))
            elif key not in right:
                found.append((sub, left[key], '<absent>'))
            else:
                found.extend(differences(left[key], right[key], sub))
        return found
    if isinstance(left, list) and isinstance(right, list) and \
            len(left) == len(right):
        found = []
        for i, (a, b) in enumerate(zip(left, right)):
            found.extend(differences(a, b, '%s[%d]' % (path, i)))
        return found
    return [] if left == right else [(path, left, right)]
