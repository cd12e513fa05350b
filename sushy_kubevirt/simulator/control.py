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

"""Runtime fault control: a small JSON API on its own loopback port.

It lives beside the Kubernetes API server, not in it, so it keeps
answering while that server restarts or refuses connections. Every
request needs ``Authorization: Bearer <the simulator's token>``.

=======  ===============================  ==================================
Method   Path                             Effect
=======  ===============================  ==================================
GET      /faults                          the armed rules
POST     /faults                          arm a rule (body: see ``add``)
DELETE   /faults/ID                       disarm one rule
DELETE   /faults                          disarm every rule
POST     /restart-api                     ``{"down_seconds": N}``: cut every
                                          connection and watch, refuse
                                          connections for N s
POST     /compact                         drop watch history (old RVs: 410)
GET      /namespaces/forbidden            the forbidden namespaces
POST     /namespaces/NS/forbid            every request in NS answers 403
POST     /namespaces/NS/allow             undo ``forbid``
=======  ===============================  ==================================

A rule body is ``{"action": ..., "method": ..., "path": <regex>, "query":
{...}, "times": N or null, <action parameters>}``; actions and their
parameters are ``faults.ACTIONS``. Bad bodies answer 400 with a message.
"""

import http.server
import json
import logging
import threading

from sushy_kubevirt.simulator import faults

LOG = logging.getLogger(__name__)
MATCH = ('method', 'path', 'query', 'times')
MAX_BODY = 64 * 1024


class BadRequest(Exception):
    """A control request that cannot be done (400)."""


def rule_doc(rule):
    return {'id': rule.id, 'action': rule.action, 'method': rule.method,
            'path': rule.path, 'query': rule.query, 'times': rule.times,
            'hits': rule.hits, 'params': dict(rule.params)}


def add(sim, body):
    """Arm the rule ``body`` describes; return it."""
    if not isinstance(body, dict):
        raise BadRequest('the body must be a JSON object')
    action = body.get('action')
    if action not in faults.ACTIONS:
        raise BadRequest('unknown action %r: expected one of %s'
                         % (action, ', '.join(sorted(faults.ACTIONS))))
    required, optional = faults.ACTIONS[action]
    unknown = set(body) - set(MATCH) - set(required) - set(optional) - {
        'action'}
    if unknown:
        raise BadRequest('unknown parameters for %s: %s'
                         % (action, ', '.join(sorted(unknown))))
    missing = [key for key in required if key not in body]
    if missing:
        raise BadRequest('%s needs %s' % (action, ', '.join(missing)))
    _check(body)
    kwargs = {key: body[key] for key in body if key != 'action'}
    if 'times' not in kwargs:  # latency lasts until removed, as in Python
        kwargs['times'] = None if action == 'latency' else 1
    return getattr(sim.faults, action)(**kwargs)


def _check(body):
    for key in ('method', 'path'):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise BadRequest('%s must be a string' % key)
    if body.get('query') is not None and not isinstance(body['query'], dict):
        raise BadRequest('query must be an object')
    times = body.get('times', 1)
    if times is not None and (not isinstance(times, int) or
                              isinstance(times, bool) or times < 1):
        raise BadRequest('times must be a positive integer or null')
    for key in ('code', 'after', 'retry_after'):
        value = body.get(key)
        if value is not None and (not isinstance(value, int) or
                                  isinstance(value, bool) or value < 0):
            raise BadRequest('%s must be a non-negative integer' % key)
    if body.get('action') == 'lose_answer' and body.get('code') is not None \
            and not 400 <= body['code'] <= 599:
        raise BadRequest('code must be an error status (400-599)')
    if body.get('message') is not None and \
            not isinstance(body['message'], str):
        raise BadRequest('message must be a string')
    seconds = body.get('seconds')
    if seconds is not None and (not isinstance(seconds, (int, float)) or
                                isinstance(seconds, bool) or seconds < 0):
        raise BadRequest('seconds must be a non-negative number')


#: What each group of endpoints needs of its target (a real control plane
#: has no fault rules and no authorizer of ours: 501).
_NEEDS = {'faults': 'faults', 'namespaces': 'authz'}


def handle(sim, method, path, body):
    """Return ``(code, document)`` for one control request."""
    parts = [p for p in path.split('/') if p]
    need = _NEEDS.get(parts[0] if parts else None)
    if need and not hasattr(sim, need):
        return 501, {'error': '%s is not available on this control plane'
                     % path}
    if parts == ['faults']:
        if method == 'GET':
            return 200, {'faults': [rule_doc(r) for r in sim.faults.rules()]}
        if method == 'POST':
            return 201, rule_doc(add(sim, body))
        if method == 'DELETE':
            sim.faults.clear()
            return 200, {'faults': []}
    elif len(parts) == 2 and parts[0] == 'faults' and method == 'DELETE':
        if sim.faults.remove_id(parts[1]):
            return 200, {'removed': parts[1]}
        return 404, {'error': 'no fault rule %r' % parts[1]}
    elif parts == ['restart-api'] and method == 'POST':
        down = (body or {}).get('down_seconds', 0) if isinstance(
            body, (dict, type(None))) else None
        if not isinstance(down, (int, float)) or isinstance(down, bool) \
                or not 0 <= down <= 3600:
            raise BadRequest('down_seconds must be a number from 0 to 3600')
        sim.restart_api(down)
        return 202, {'restarting': True, 'down_seconds': down}
    elif parts == ['compact'] and method == 'POST':
        sim.store.compact()
        return 200, {'compactedResourceVersion': str(
            sim.store.compacted_resource_version)}
    elif parts == ['namespaces', 'forbidden'] and method == 'GET':
        return 200, {'forbidden': sim.authz.forbidden_namespaces()}
    elif (len(parts) == 3 and parts[0] == 'namespaces'
          and parts[2] in ('forbid', 'allow') and method == 'POST'):
        if parts[2] == 'forbid':
            sim.authz.forbid_namespace(parts[1])
        else:
            sim.authz.allow_namespace(parts[1])
        return 200, {'forbidden': sim.authz.forbidden_namespaces()}
    else:
        return 404, {'error': 'no such control endpoint: %s %s'
                     % (method, path)}
    return 405, {'error': '%s is not allowed on %s' % (method, path)}


class _Handler(http.server.BaseHTTPRequestHandler):
    sim = None  # set by ControlServer
    protocol_version = 'HTTP/1.1'

    def log_message(self, fmt, *args):
        LOG.debug('control: ' + fmt, *args)

    def do_GET(self):
        self._serve()

    do_POST = do_DELETE = do_GET

    def _serve(self):
        try:
            code, doc = self._answer()
        except BadRequest as exc:
            code, doc = 400, {'error': str(exc)}
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _answer(self):
        if self.headers.get('Authorization') != 'Bearer ' + self.sim.token:
            return 401, {'error': 'a Bearer token (the simulator\'s) is '
                                  'required'}
        length = int(self.headers.get('Content-Length') or 0)
        if length > MAX_BODY:
            raise BadRequest('body larger than %d bytes' % MAX_BODY)
        raw = self.rfile.read(length) if length else b''
        try:
            body = json.loads(raw) if raw else None
        except ValueError as exc:
            raise BadRequest('malformed JSON: %s' % exc)
        return handle(self.sim, self.command, self.path.split('?')[0], body)


class ControlServer:
    """The control API of one simulator, on 127.0.0.1."""

    def __init__(self, sim, host='127.0.0.1', port=0):
        handler = type('ControlHandler', (_Handler,), {'sim': sim})
        self._httpd = http.server.ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self.url = 'http://%s:%d' % (host, self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={'poll_interval': 0.2},
            name='sim-control', daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)
