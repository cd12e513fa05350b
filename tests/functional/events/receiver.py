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

"""Event receivers on loopback: one that keeps what it gets, one that hangs.
"""

import http.server
import json
import os
import socket
import ssl
import threading
import time

CERTS = os.path.join(os.path.dirname(__file__), 'certs')
#: The CA of ``certs/receiver.crt`` (``DNS:receiver.test`` only).
CA = os.path.join(CERTS, 'ca.crt')


class Receiver:
    """Records every POSTed Event: ``(monotonic time, headers, body)``.

    :param host: the loopback address to listen on.
    :param port: 0 for a free one.
    :param tls: serve HTTPS with ``certs/receiver.crt``.
    """

    def __init__(self, status=204, host='127.0.0.1', port=0, tls=False):
        self.status = status
        self.posts = []
        self._cond = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length) or b'null')
                with receiver._cond:
                    receiver.posts.append(
                        (time.monotonic(), dict(self.headers), body))
                    receiver._cond.notify_all()
                self.send_response(receiver.status)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer((host, port),
                                                       Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_port
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(os.path.join(CERTS, 'receiver.crt'),
                                    os.path.join(CERTS, 'receiver.key'))
            self._server.socket = context.wrap_socket(self._server.socket,
                                                      server_side=True)
        self.url = '%s://%s:%d/events' % ('https' if tls else 'http', host,
                                          self.port)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def close(self):
        """Release the port of a receiver that was never entered."""
        self._server.server_close()

    def events(self):
        """Every ``Events[]`` record received, in arrival order."""
        with self._cond:
            return [record for _, _, body in self.posts
                    for record in body['Events']]

    def matching(self, origin=None, message=None):
        return [e for e in self.events()
                if (origin is None or
                    e['OriginOfCondition']['@odata.id'] == origin)
                and (message is None or e['MessageId'].endswith(
                    '.' + message))]

    def wait(self, predicate, timeout=20.0):
        """Block until ``predicate(self)`` holds; return its value."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate(self)
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        'receiver: condition not met in %.0fs; got %s'
                        % (timeout, [e['MessageId'] for e in
                                     self.events()][-20:]))
                self._cond.wait(min(left, 0.5))


class Hanging:
    """Accepts connections and never answers; counts them."""

    def __init__(self):
        self._sock = socket.create_server(('127.0.0.1', 0))
        self.url = 'http://127.0.0.1:%d/events' % self._sock.getsockname()[1]
        self.accepted = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._sock.close()
        with self._cond:
            for conn in self.accepted:
                conn.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            with self._cond:
                self.accepted.append(conn)
                self._cond.notify_all()
