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

"""virt-handler's HTTPS API, which virt-api calls for a running VMI.

virt-api finds the virt-handler pod on the VMI's node, and calls
``PUT https://<its pod IP>:<--console-server-port>/v1/namespaces/{ns}/
virtualmachineinstances/{name}/{pause|unpause|softreboot|reset}`` with
its client certificate (``kubevirt.io:system:client:virt-handler``). The
simulated handler pods have the IP 127.0.0.1, and this server answers on
that port, with a serving certificate of KubeVirt's CA named
``kubevirt.io:system:node:virt-handler``, as virt-api checks.
"""

import http.server
import re
import ssl
import threading

PATH = re.compile(r'^/v1/namespaces/([^/]+)/virtualmachineinstances/'
                  r'([^/]+)/([a-z]+)$')


class HandlerAPI:
    """Serves ``handler.act`` on loopback over mutual TLS."""

    def __init__(self, handler, cert, key, client_ca):
        self.handler = handler
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert), str(key))
        self.context.load_verify_locations(str(client_ca))
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.server = None

    @property
    def port(self):
        return self.server.server_address[1]

    def start(self, sock):
        """Listen on ``sock``, bound already (``ports.reserved``)."""
        api = self

        class Request(http.server.BaseHTTPRequestHandler):
            def do_PUT(self):
                match = PATH.match(self.path.split('?', 1)[0])
                length = int(self.headers.get('Content-Length') or 0)
                self.rfile.read(min(length, 1 << 16))
                if match is None:
                    code, message = 404, 'not found'
                else:
                    code, message = api.handler.act(*match.groups())
                body = message.encode()
                self.send_response(code)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(
            sock.getsockname(), Request, bind_and_activate=False)
        self.server.socket.close()
        self.server.socket = sock
        self.server.server_activate()
        self.server.daemon_threads = True
        self.server.socket = self.context.wrap_socket(
            self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True,
                         name='sim virt-handler API').start()
        return self

    def stop(self):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
