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

"""Connection handling: TCP_NODELAY, one write per response, disconnects.

These guard against the Nagle / delayed-ACK stall (a response written as
headers then body waits ~40 ms for the client's ACK) and against client
disconnects being reported as server errors.
"""

import logging
import socket
import ssl
import struct
import time

import pytest
from tests.functional.simulator import apitools

from sushy_kubevirt.simulator import apiserver

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)
AUTH = {'Authorization': 'Bearer sushy-kubevirt-admin'}
WIDGET_PATH = '/apis/%s/%s/namespaces/default/%s' % (G, V, P)
LOGGER = 'sushy_kubevirt.simulator.apiserver'


class _Recorder:
    """A wfile proxy that records every write; flushes can be slowed."""

    def __init__(self, wfile, writes, slow_flush=0.0):
        self._wfile = wfile
        self._writes = writes
        self._slow_flush = slow_flush

    def write(self, data):
        self._writes.append(bytes(data))
        return self._wfile.write(data)

    def flush(self):
        self._wfile.flush()
        time.sleep(self._slow_flush)  # a server thread descheduled here

    def __getattr__(self, name):
        return getattr(self._wfile, name)


def _wrap_wfile(monkeypatch, **kwargs):
    recorded = []
    setup = apiserver._Handler.setup

    def recording_setup(handler):
        setup(handler)
        handler.wfile = _Recorder(handler.wfile, recorded, **kwargs)
    monkeypatch.setattr(apiserver._Handler, 'setup', recording_setup)
    return recorded


@pytest.fixture
def writes(monkeypatch):
    return _wrap_wfile(monkeypatch)


def _reset(sock):
    """Close with RST (SO_LINGER 0), like a killed client."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                    struct.pack('ii', 1, 0))
    sock.close()


def test_accepted_sockets_have_tcp_nodelay(simulator):
    conn = apitools.http_connection(simulator)
    try:
        conn.request('GET', '/version')
        conn.getresponse().read()
        sockets = list(simulator._api._connections)
        assert sockets
        for sock in sockets:
            assert sock.getsockopt(socket.IPPROTO_TCP,
                                   socket.TCP_NODELAY) == 1
    finally:
        conn.close()


def test_https_keeps_the_connection_alive(simulator):
    conn = apitools.http_connection(simulator)
    try:
        socks = []
        for _ in range(3):
            conn.request('GET', '/version')
            assert conn.getresponse().read()
            socks.append(conn.sock)
        assert isinstance(socks[0], ssl.SSLSocket)
        assert socks == [socks[0]] * 3  # one handshake for three requests
        assert len(simulator._api._connections) == 1
    finally:
        conn.close()


def test_plain_http_to_https_is_answered_as_go_does(simulator):
    with socket.create_connection(('127.0.0.1', simulator.port), 5) as sock:
        sock.sendall(b'GET /version HTTP/1.1\r\nHost: sim\r\n\r\n')
        answer = b''
        for _ in range(10):  # until the server closes
            data = sock.recv(4096)
            if not data:
                break
            answer += data
    assert answer == (b'HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP '
                      b'request to an HTTPS server.\n')
    # The port still speaks TLS.
    conn = apitools.http_connection(simulator)
    try:
        conn.request('GET', '/version')
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_each_response_is_one_write(simulator, custom, writes):
    apitools.create(custom, 'a')
    conn = apitools.http_connection(simulator)
    try:
        for method, body, ctype in (
                ('GET', None, None),
                ('PATCH', b'{"spec":{"size":2}}',
                 'application/merge-patch+json')):
            del writes[:]
            headers = dict(AUTH, **({'Content-Type': ctype} if ctype
                                    else {}))
            conn.request(method, WIDGET_PATH + '/a', body=body,
                         headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            assert resp.status == 200, data
            assert len(writes) == 1, (method, writes)
            assert writes[0].startswith(b'HTTP/1.1 200 OK\r\n')
            assert writes[0].endswith(b'\r\n\r\n' + data)
    finally:
        conn.close()


def test_client_disconnects_are_not_errors(simulator, caplog, capfd):
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    request = ('GET %s%%s HTTP/1.1\r\nHost: sim\r\nAuthorization: %s'
               '\r\n\r\n' % (WIDGET_PATH, AUTH['Authorization']))
    # A watch whose client resets the connection; the next event fails.
    watch = apitools.connect(simulator)
    watch.sendall((request % '?watch=true&timeoutSeconds=10').encode())
    assert watch.recv(4096).startswith(b'HTTP/1.1 200 OK')
    _reset(watch)
    # An idle keep-alive connection reset by its client.
    idle = apitools.connect(simulator)
    idle.sendall((request % '').encode())
    assert idle.recv(4096).startswith(b'HTTP/1.1 200 OK')
    _reset(idle)
    # A client that resets while the server reads its body.
    post = apitools.connect(simulator)
    post.sendall(('POST %s HTTP/1.1\r\nHost: sim\r\nContent-Length: 99'
                  '\r\n\r\n{"metadata"' % WIDGET_PATH).encode())
    _reset(post)
    for name in 'abc':
        simulator.store.create(apitools.WIDGETS, apitools.widget(name))
    # Every handler has finished once no connection is tracked.
    simulator.wait_for(lambda: not simulator._api._connections)
    # 499 when the reset came during the body read (not before it).
    assert simulator.request_log.count(status=499) <= 1
    noisy = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert noisy == []
    assert all(r.exc_info is None for r in caplog.records
               if r.name == LOGGER)
    assert 'Traceback' not in capfd.readouterr().err
    watches = simulator.request_log.entries(verb='watch')
    assert [e['status'] for e in watches] == [200]
    assert watches[0]['duration'] is not None


def test_request_logged_before_its_response(simulator, custom,
                                            monkeypatch):
    """A client holding its response finds the request log entry.

    However slow the server thread is after writing; no fence needed.
    """
    _wrap_wfile(monkeypatch, slow_flush=0.05)
    log = simulator.request_log
    for i in range(3):
        log.clear()
        custom.list_namespaced_custom_object(G, V, 'default', P)
        assert log.count(verb='list', status=200) == 1
        apitools.create(custom, 'w%d' % i)
        assert log.count(verb='create', status=201) == 1
    log.clear()
    simulator.faults.watch_error(500, after=3, query={'watch': None})
    events = apitools.read_events(
        apitools.watch_lines(custom, timeout_seconds=5))
    assert [e['type'] for e in events] == ['ADDED'] * 3 + ['ERROR']
    assert log.entries(verb='watch')[0]['events'] == 3
