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

"""HTTP/1.1 transport: the listening server and its connections.

``ApiServer`` binds, serves one thread per connection (over TLS when
given a server ``ssl.SSLContext``; the handshake runs in the
connection's thread; a plain HTTP request there gets Go's 400 "Client
sent an HTTP request to an HTTPS server.") and can cut every connection
at once (stop/restart). ``_Handler`` turns one request into an
answer with kube-apiserver's filter order: authentication (401), then
priority and fairness (429), then authorization (403), then the handler
(``routing.handle``, or ``watch.serve`` for a watch). Fault rules
(latency, forced status) run inside the APF window, so a delayed request
counts as in flight; a lost answer (``lose_answer``) is decided once the
request succeeded. Every request is put in the request log before its
last bytes leave.
"""

import http.server
import io
import logging
import random
import socket
import ssl
import threading
import time
import urllib.parse

from sushy_kubevirt import ports
from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import encoding
from sushy_kubevirt.simulator import routing
from sushy_kubevirt.simulator import schemas
from sushy_kubevirt.simulator import watch

LOG = logging.getLogger(__name__)

NOT_FOUND_TEXT = '404 page not found\n'
#: Go's net/http: a TLS record header that is one of these request starts
#: is a plain HTTP request, answered with ``PLAIN_TO_HTTPS`` and closed.
PLAIN_HTTP_STARTS = (b'GET /', b'HEAD ', b'POST ', b'PUT /', b'OPTIO')
PLAIN_TO_HTTPS = (b'HTTP/1.0 400 Bad Request\r\n\r\n'
                  b'Client sent an HTTP request to an HTTPS server.\n')


class _Server(http.server.ThreadingHTTPServer):
    allow_reuse_address = True  # restart_api() reopens the same port
    daemon_threads = True
    # Hundreds of informers (one per namespace and resource) connect at
    # once; the default backlog of 5 makes them wait for TCP retries.
    request_queue_size = 1024
    ssl_context = None  # set by ApiServer.start for HTTPS

    def get_request(self):
        conn, address = super().get_request()
        if self.ssl_context is not None:
            # No I/O here: the handshake happens on the first read, in
            # the connection's own thread.
            conn = self.ssl_context.wrap_socket(
                conn, server_side=True, do_handshake_on_connect=False)
        return conn, address


class ApiServer:
    """Serves one simulator's store over HTTP/1.1 (HTTPS with a context)."""

    def __init__(self, sim, host='127.0.0.1', port=0, ssl_context=None):
        self.sim = sim
        self.store = sim.store
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.json_cache = encoding.JsonCache()
        self.random = random.Random(sim.seed)  # default watch timeouts
        self._httpd = None
        self._thread = None
        self._lock = threading.Lock()
        self._connections = set()

    def start(self):
        if not self.port:
            self.port = ports.restartable(self.host)
        handler = type('Handler', (_Handler,), {'api': self})
        self._httpd = _Server((self.host, self.port), handler)
        self._httpd.ssl_context = self.ssl_context
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={'poll_interval': 0.1},
            name='sim-apiserver', daemon=True)
        self._thread.start()
        return self.port

    def stop(self):
        """Stop listening and cut every open connection."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            _shutdown(conn)  # abrupt, like a crashed server
        self.store.close_watchers()

    @property
    def running(self):
        return self._httpd is not None

    def track(self, conn, add):
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


def _shutdown(conn):
    try:
        # The TCP shutdown alone: SSLSocket.shutdown would also drop its
        # TLS state, under the thread still using it.
        socket.socket.shutdown(conn, socket.SHUT_RDWR)
    except OSError:
        pass


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'sushy-kubevirt-sim'
    sys_version = ''
    wbufsize = io.DEFAULT_BUFFER_SIZE  # buffered: one write per flush
    api = None  # set by ApiServer.start

    def setup(self):
        super().setup()
        # No Nagle: a small write must not wait for the peer's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.api.track(self.connection, True)

    def handle(self):
        try:
            if self.api.ssl_context is not None and self._plain_http():
                return
            super().handle()
        except (ConnectionError, ssl.SSLError) as exc:
            # The client went away, or failed the handshake: normal.
            LOG.debug('%s disconnected: %s', self.address_string(), exc)

    def _plain_http(self):
        """Answer a plain HTTP request as Go does; True if it was one."""
        raw = socket.socket  # the TCP bytes, under the TLS layer
        head = raw.recv(self.connection, 5,
                        socket.MSG_PEEK | socket.MSG_WAITALL)
        if head not in PLAIN_HTTP_STARTS:
            return False
        LOG.debug('%s sent an HTTP request to the HTTPS server',
                  self.address_string())
        raw.sendall(self.connection, PLAIN_TO_HTTPS)
        return True

    def finish(self):
        try:
            for stream in (self.wfile, self.rfile):
                try:
                    stream.close()  # flushes the write buffer first
                except OSError:
                    pass
        finally:
            self.api.track(self.connection, False)

    def log_message(self, fmt, *args):
        LOG.debug('%s ' + fmt, self.address_string(), *args)

    def do_GET(self):
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def abort(self):
        """Cut the connection (a dropped or stalled watch)."""
        self.close_connection = True
        _shutdown(self.connection)

    def _read_body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(length) if length else b''

    def record(self, code):
        """Put the request in the log (once) before its last bytes go out.

        A client that has read a response, or a watch's last event, always
        finds the entry: a non-watch is logged before its response is
        written, a watch before its final line and terminating chunk.
        """
        entry, req = self.entry, self._req
        if entry['status'] is not None:
            return
        entry.update(status=code, verb=req.verb, group=req.group or '',
                     resource=req.resource, namespace=req.namespace,
                     name=req.name, user=req.user,
                     duration=time.monotonic() - self._started)
        self.api.sim.request_log.record(entry)

    def _send(self, code, data, content_type='application/json',
              headers=None):
        if isinstance(data, str):
            data = data.encode()
        self.record(code)
        self.send_response(code)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.send_header('Cache-Control', 'no-cache, private')
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        for message in self._req.warnings:
            self.send_header('Warning', schemas.warning_header(message))
        # Headers and body leave in one write (end_headers would send the
        # headers on their own).
        self._headers_buffer.append(b'\r\n%s' % data)
        self.flush_headers()
        self.wfile.flush()

    def _send_error(self, error):
        self.entry['error'] = error.message
        data, ctype = error.body()
        self._send(error.code, data, ctype, error.headers)

    def _serve(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in
                 urllib.parse.parse_qs(url.query,
                                       keep_blank_values=True).items()}
        req = self._req = routing.Request(self.command, url.path, query)
        self.entry = {'method': self.command, 'path': url.path,
                      'query': dict(query), 'verb': None, 'group': None,
                      'resource': None, 'namespace': None, 'name': None,
                      'status': None, 'started': time.time(),
                      'duration': None, 'events': 0, 'user': None,
                      'error': None, 'warnings': req.warnings}
        self._started = time.monotonic()
        self.begun = False  # a watch stream has started
        try:
            self._dispatch(req, self._read_body())
        except OSError as exc:
            LOG.debug('connection lost: %s', exc)
            self.close_connection = True
        finally:
            # No-op when logged already; 499: gone before any response.
            self.record(200 if self.begun else 499)

    def _lose(self, code, params):
        """Lose the answer of a request applied (a ``lose_answer`` fault).

        Logged with the status it had; the connection is cut, or
        ``params['code']`` answered instead.
        """
        self.entry['error'] = 'answer lost (fault)'
        if params.get('code') is None:
            self.record(code)
            self.abort()
            return
        self._send_error(apistatus.from_code(params['code'],
                                             params.get('message')))

    def _dispatch(self, req, body):
        api = self.api
        faults = api.sim.faults
        try:
            try:
                discovery, missing = routing.route(api, req), False
                if discovery is not None:
                    req.verb = 'get'
            except routing.PlainNotFound:
                discovery, missing = None, True
            if not routing.is_version(req.path):
                req.user = api.sim.authz.authenticate(
                    self.headers.get('Authorization'))
            if missing:
                raise routing.PlainNotFound()
            release = faults.admit(req.verb == 'watch')
            try:
                faults.before(req.method, req.path, req.query)
                if discovery is not None:
                    self._send(200, encoding.compact(discovery))
                    return
                if not api.sim.authz.authorized(
                        req.user, req.verb, req.namespace, req.resource,
                        req.group):
                    raise apistatus.forbidden(req.user, req.verb, req.rt,
                                              req.namespace, req.name or '',
                                              req.subresource or '')
                if req.verb == 'watch':
                    watch.serve(self, req)
                    return
                code, doc = routing.handle(api, req, body, self.headers)
                lost = faults.lost_answer(req.method, req.path, req.query)
            finally:
                release()
            if lost is not None:
                self._lose(code, lost)
                return
        except routing.PlainNotFound:
            self._send(404, NOT_FOUND_TEXT, 'text/plain; charset=utf-8')
            return
        except apistatus.ApiError as exc:
            if not self.begun:
                self._send_error(exc)
            else:  # a watch already answered 200: just cut it
                LOG.warning('watch failed after it started: %s', exc)
                self.close_connection = True
            return
        except OSError:
            raise
        except Exception as exc:  # noqa: broad: answer 500 like kube
            LOG.exception('simulator handler failed')
            if self.begun:
                self.close_connection = True  # mid-stream: just cut it
                return
            self._send_error(apistatus.internal(str(exc)))
            return
        if doc is None:
            self._send(code, b'')
        elif isinstance(doc, str):
            self._send(code, doc)
        else:
            self._send(code, encoding.compact(doc))
