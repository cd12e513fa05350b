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

"""A case's requests to one server and their normalised transcript."""

import json
import time

from tests.differential import normalize

WATCH_READ_TIMEOUT = 15.0


class Answer:
    """One response: status, decoded body, Warning headers."""

    def __init__(self, resp):
        self.status = resp.status_code
        self.warnings = resp.raw.headers.getlist('Warning')
        try:
            self.body = resp.json()
        except ValueError:
            self.body = resp.text

    def __getitem__(self, key):
        return self.body[key]

    @property
    def rv(self):
        return self.body['metadata']['resourceVersion']

    @property
    def uid(self):
        return self.body['metadata']['uid']


class Session:
    """Sends a case's requests to one backend, recording each answer."""

    def __init__(self, backend, namespace):
        self.backend = backend
        self.namespace = namespace
        self.norm = normalize.Normalizer()
        self.transcript = []

    def widgets(self, name=''):
        path = '/apis/sim.example.com/v1/namespaces/%s/widgets' % (
            self.namespace)
        return path + ('/' + name if name else '')

    def call(self, method, path, body=None, *, query=None, data=None,
             content_type=None, record=True, note=None):
        headers = {'Accept': 'application/json'}
        if body is not None:
            data = json.dumps(body)
        if data is not None:
            headers['Content-Type'] = content_type or 'application/json'
        resp = self.backend.request(method, path, params=query, data=data,
                                    headers=headers)
        answer = Answer(resp)
        if record:
            step = {'request': '%s %s' % (method, path),
                    'status': answer.status,
                    'body': self.norm.body(answer.body)}
            if query:
                step['query'] = self._query(query)
            if answer.warnings:
                step['warnings'] = answer.warnings
            if note:
                step['note'] = note
            self.transcript.append(step)
        return answer

    def _query(self, query):
        """The query as recorded: resourceVersions and tokens replaced."""
        query = dict(query)
        rv = query.get('resourceVersion')
        if rv in self.norm.rvs:
            query['resourceVersion'] = self.norm.rvs[rv]
        elif rv and rv.isdigit() and rv != '0':
            query['resourceVersion'] = '<n>'
        if query.get('continue') and query['continue'] != 'garbage':
            query['continue'] = '<continue>'
        return query

    def get(self, path, **kwargs):
        return self.call('GET', path, **kwargs)

    def post(self, path, body, **kwargs):
        return self.call('POST', path, body, **kwargs)

    def put(self, path, body, **kwargs):
        return self.call('PUT', path, body, **kwargs)

    def delete(self, path, body=None, **kwargs):
        return self.call('DELETE', path, body, **kwargs)

    def patch(self, path, body, content_type, **kwargs):
        data = body if isinstance(body, str) else json.dumps(body)
        return self.call('PATCH', path, data=data,
                         content_type=content_type, **kwargs)

    def fact(self, name, value):
        """Record a derived fact (e.g. "rv increased")."""
        self.transcript.append({'fact': name, 'value': value})

    def watch(self, path, query, *, limit=None, until=None,
              read_timeout=WATCH_READ_TIMEOUT, collapse_bookmarks=False):
        """Watch; read until EOF, ``limit`` events or ``until(event)``.

        Records the events and how the stream ended (``eof``: the server
        ended it; ``closed``: we did). ``collapse_bookmarks``: record a
        run of equal bookmarks once (kube-apiserver sends one or two
        before a deadline, by the timing of its one-second buckets).
        """
        query = dict(query, watch='true')
        resp = self.backend.http.get(
            self.backend.url + path, params=query, stream=True,
            timeout=(10, read_timeout))
        events, end = [], 'eof'
        started = time.monotonic()
        try:
            if resp.status_code != 200:
                self.transcript.append({
                    'request': 'WATCH %s' % path,
                    'query': self._query(query),
                    'status': resp.status_code,
                    'body': self.norm.body(Answer(resp).body)})
                return []
            for line in resp.iter_lines():
                if not line.strip():
                    continue
                events.append(json.loads(line))
                if (limit is not None and len(events) >= limit or
                        until is not None and until(events[-1])):
                    end = 'closed'
                    break
        finally:
            resp.close()
        recorded = []
        for event in (self.norm.event(e) for e in events):
            if not (collapse_bookmarks and recorded and event == recorded[-1]
                    and event['type'] == 'BOOKMARK'):
                recorded.append(event)
        self.transcript.append({
            'request': 'WATCH %s' % path, 'query': self._query(query),
            'status': 200, 'events': recorded, 'end': end})
        self.elapsed = time.monotonic() - started
        return events

    def await_(self, predicate, timeout=30.0, what='condition'):
        """Poll ``predicate()`` (unrecorded calls) until it is true."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError('%s: %s not met in %.0f s'
                                     % (self.backend.name, what, timeout))
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def gone(self, path):
        """Whether GET ``path`` is 404 (unrecorded)."""
        return self.get(path, record=False).status == 404
