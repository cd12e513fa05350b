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

"""A tiny HTTP server on 127.0.0.1 serving one ISO-sized blob for vmedia."""

import http.server
import threading

IMAGE_PATH = '/boot.iso'


class _Handler(http.server.BaseHTTPRequestHandler):
    blob = b''

    def do_HEAD(self):
        self._answer(with_body=False)

    def do_GET(self):
        self._answer(with_body=True)

    def _answer(self, with_body):
        if self.path.split('?')[0] != IMAGE_PATH:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header('Content-Type', 'application/octet-stream')
        self.send_header('Content-Length', str(len(self.blob)))
        self.end_headers()
        if with_body:
            self.wfile.write(self.blob)

    def log_message(self, *args):
        pass


class ImageServer:
    """Serve ``size`` zero bytes at ``url`` until :meth:`stop`."""

    def __init__(self, size=1 << 20):
        handler = type('Handler', (_Handler,), {'blob': bytes(size)})
        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                       handler)
        self._server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d%s' % (self._server.server_port,
                                              IMAGE_PATH)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
