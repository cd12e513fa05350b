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

"""virt-api's HTTPS endpoints, for a real kube-apiserver to call.

``WebhookServer(sim, cert_file, key_file, client_ca)`` serves on 127.0.0.1
(a free port):

* the aggregated API ``subresources.kubevirt.io/v1`` as kube-apiserver's
  aggregator proxies it: discovery (``/apis``, the group, the version,
  ``version``, empty OpenAPI v2 and v3 documents, which the aggregator
  downloads) and ``PUT .../namespaces/{ns}/{plural}/{name}/{action}``,
  answered by ``sim.subresources`` with the in-process simulator's
  arguments, codes and ``Status`` bodies;
* the admission webhooks (``AdmissionReview`` ``admission.k8s.io/v1``) at
  ``/{plural}-mutate`` (``sim.admission``: a JSONPatch of what the
  functions changed) and ``/{plural}-validate`` (``sim.validation``), with
  virt-api's denial: allowed false, the error's code and reason, and the
  causes' messages joined, which kube-apiserver prefixes with
  ``admission webhook "<name>" denied the request:``.

One TLS listener; a client certificate is optional but, when sent, must
be signed by ``client_ca`` (the front-proxy CA). The aggregated API
requires one: kube-apiserver has authenticated and authorized the caller
and names it in ``X-Remote-User`` over its front-proxy client
certificate, so a request without a verified certificate and user is 401.
The admission paths do not: kube-apiserver calls webhooks without a client
certificate unless its admission configuration gives it one.
"""

import base64
import http.server
import json
import logging
import socket
import ssl
import threading
import urllib.parse

import jsonpatch

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import discovery
from sushy_kubevirt.simulator import routing
from sushy_kubevirt.simulator import storage

LOG = logging.getLogger(__name__)

HOST = '127.0.0.1'
GROUP, VERSION = 'subresources.kubevirt.io', 'v1'
GROUP_VERSION = '%s/%s' % (GROUP, VERSION)
NOT_FOUND_TEXT = b'404 page not found\n'


class NotFound(Exception):
    """A path nothing serves: plain-text 404."""


def group_document():
    version = {'groupVersion': GROUP_VERSION, 'version': VERSION}
    return {'name': GROUP, 'versions': [version],
            'preferredVersion': version}


def resource_list(subresources):
    """The APIResourceList of the registered actions."""
    return {'kind': 'APIResourceList', 'apiVersion': 'v1',
            'groupVersion': GROUP_VERSION, 'resources': [
                {'name': '%s/%s' % (plural, action), 'singularName': '',
                 'namespaced': True, 'kind': '', 'verbs': ['update']}
                for gv, plural, action in sorted(subresources)
                if gv == GROUP_VERSION]}


def discovery_document(sim, path):
    """The document the aggregator reads at ``path``, or NotFound."""
    documents = {
        '/openapi/v2': {'swagger': '2.0', 'paths': {},
                        'info': {'title': 'KubeVirt API',
                                 'version': VERSION}},
        '/openapi/v3': {'paths': {}},
        '/apis': {'kind': 'APIGroupList', 'apiVersion': 'v1',
                  'groups': [group_document()]},
        '/apis/' + GROUP: dict(group_document(), kind='APIGroup',
                               apiVersion='v1'),
        '/apis/' + GROUP_VERSION: resource_list(sim.subresources),
        discovery.KUBEVIRT_VERSION_PATH: discovery.kubevirt_version(),
    }
    if path.rstrip('/') not in documents:
        raise NotFound()
    return documents[path.rstrip('/')]


def action_handler(sim, path):
    """``(fn, namespace, name)`` of an action path, or NotFound."""
    parts = path.strip('/').split('/')
    if len(parts) != 8 or parts[:4] != ['apis', GROUP, VERSION,
                                        'namespaces']:
        raise NotFound()
    namespace, plural, name, action = parts[4:]
    fn = sim.subresources.get((GROUP_VERSION, plural, action))
    if fn is None:
        raise NotFound()
    return fn, namespace, name


def denial(error):
    """virt-api's AdmissionResponse result for a refusal."""
    causes = error.details.get('causes') or []
    status = {'code': error.code, 'reason': error.reason,
              'message': (', '.join(c['message'] for c in causes)
                          if causes else error.message)}
    if causes:
        status['details'] = {'causes': causes}
    return status


def review(sim, body, mutating):
    """The AdmissionReview answer of the mutating or validating functions."""
    request = body['request']
    resource = request['resource']
    rt = sim.store.resource(resource.get('group', ''), resource['resource'])
    hooks = (sim.admission if mutating else sim.validation).get(rt.key, ())
    new = storage.clone(request['object'])
    answer = {'uid': request['uid'], 'allowed': True}
    try:
        for fn in hooks:
            fn(request['operation'], new, request.get('oldObject'),
               (request.get('userInfo') or {}).get('username'))
    except apistatus.ApiError as exc:
        answer.update(allowed=False, status=denial(exc))
    else:
        ops = jsonpatch.make_patch(request['object'], new).patch
        if mutating and ops:
            answer['patchType'] = 'JSONPatch'
            answer['patch'] = base64.b64encode(
                json.dumps(ops).encode()).decode()
    return {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview',
            'response': answer}


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context, handler):
        self.context = context
        self.connections = set()
        self.lock = threading.Lock()
        super().__init__((HOST, 0), handler)

    def track(self, conn, add):
        with self.lock:
            (self.connections.add if add else self.connections.discard)(conn)

    def cut_connections(self):
        """End kept-alive connections, so their threads end too."""
        with self.lock:
            connections = list(self.connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def get_request(self):
        sock, address = super().get_request()
        return self.context.wrap_socket(
            sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request, client_address):
        LOG.debug('webhook connection from %s failed', client_address,
                  exc_info=True)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'sushy-kubevirt-virt-api'
    sys_version = ''
    timeout = 30    # an idle keep-alive connection is closed
    sim = None      # set by WebhookServer

    def setup(self):
        super().setup()
        self.connection.do_handshake()  # here, not in the accept loop
        self.server.track(self.connection, True)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def log_message(self, fmt, *args):
        LOG.debug('%s ' + fmt, self.address_string(), *args)

    def do_GET(self):
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _serve(self):
        path = urllib.parse.urlsplit(self.path).path
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        try:
            if path.startswith(('/apis', '/openapi/')):
                code, doc = self._aggregated(path, body)
            else:
                code, doc = self._admission(path, body)
        except NotFound:
            self._send(404, NOT_FOUND_TEXT, 'text/plain; charset=utf-8')
        except apistatus.ApiError as exc:
            self._send(exc.code, *exc.body())
        except Exception as exc:  # noqa: broad: answer 500 like virt-api
            LOG.exception('webhook %s %s failed', self.command, path)
            self._send(500, *apistatus.internal(str(exc)).body())
        else:
            self._send(code, b'' if doc is None else json.dumps(doc).encode())

    def _aggregated(self, path, body):
        user = self.headers.get('X-Remote-User')
        if not self.connection.getpeercert() or not user:
            raise apistatus.unauthorized()
        if self.command == 'GET':
            return 200, discovery_document(self.sim, path)
        fn, namespace, name = action_handler(self.sim, path)
        routing.check_accept(fn, self.headers.get('Accept'))
        if self.command != 'PUT':
            raise apistatus.ApiError(405, 'MethodNotAllowed',
                                     '%s is not allowed' % self.command)
        result = fn(namespace, name, json.loads(body) if body else None,
                    user)
        return result if isinstance(result, tuple) else (200, result)

    def _admission(self, path, body):
        kind = path.rpartition('-')[2]
        if kind not in ('mutate', 'validate') or self.command != 'POST':
            raise NotFound()
        return 200, review(self.sim, json.loads(body), kind == 'mutate')

    def _send(self, code, data, content_type='application/json'):
        self.send_response(code)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class WebhookServer:
    """virt-api's aggregated API and admission webhooks over HTTPS."""

    def __init__(self, sim, cert_file, key_file, client_ca):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cert_file), str(key_file))
        context.load_verify_locations(cafile=str(client_ca))
        context.verify_mode = ssl.CERT_OPTIONAL
        handler = type('Handler', (_Handler,), {'sim': sim})
        self._httpd = _Server(context, handler)
        self._thread = None

    @property
    def port(self):
        return self._httpd.server_address[1]

    @property
    def url(self):
        return 'https://%s:%d' % (HOST, self.port)

    def start(self):
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={'poll_interval': 0.1},
            name='sim-webhooks', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop listening and end every connection."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()
        self._httpd.cut_connections()
