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

"""Slow clients: connections sending a request a byte a second."""

import socket
import statistics
import threading
import time

import requests

#: A request that never ends at a byte a second within the test.
TRICKLE = (b'GET /redfish/v1/Systems HTTP/1.1\r\nHost: 127.0.0.1\r\n'
           b'X-Padding: ' + b'p' * 200)


class SlowClients:
    """``count`` connections sending :data:`TRICKLE` a byte a second.

    Records, for each connection the server closes, the seconds from its
    first byte; stops after ``bound`` seconds.
    """

    def __init__(self, port, count, bound):
        self.address = ('127.0.0.1', port)
        self.count = count
        self.bound = bound
        self.closed = []
        self._sent = {}   # connection: [bytes sent, when the first was]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)

    def __enter__(self):
        """Connect them all and send each its first byte."""
        for _ in range(self.count):
            conn = socket.create_connection(self.address, timeout=5)
            conn.setblocking(False)
            self._sent[conn] = [0, time.monotonic()]
        self._send_next()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(self.bound + 5)
        for conn in self._sent:
            conn.close()

    def _trickle(self):
        started = time.monotonic()
        for _ in range(int(self.bound)):
            if not self._sent or self._stop.wait(
                    1.0 - (time.monotonic() - started) % 1.0):
                return
            self._send_next()

    def _send_next(self):
        for conn in list(self._sent):
            if not self._step(conn, self._sent[conn]):
                self.closed.append(
                    time.monotonic() - self._sent.pop(conn)[1])
                conn.close()

    @staticmethod
    def _step(conn, state):
        """Send the next byte; False once the server closed (or answered)."""
        try:
            conn.recv(1024)   # b'' (closed) or an answer: it is over
            return False
        except BlockingIOError:
            pass
        except OSError:
            return False
        try:
            conn.send(TRICKLE[state[0]:state[0] + 1])
        except OSError:
            return False
        state[0] += 1
        return True


def get_seconds(url, **kwargs):
    """Seconds a GET of ``url`` took; it must answer 200."""
    started = time.monotonic()
    answer = requests.get(url, timeout=10, **kwargs)
    assert answer.status_code == 200, answer.text
    return time.monotonic() - started


def assert_as_fast(under_load, quiet, ratio=5):
    """The median latency under load is at most ``ratio`` times quiet's."""
    loud, calm = statistics.median(under_load), statistics.median(quiet)
    assert loud <= ratio * calm, (loud, calm)
