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

"""Event streams leave threads to plain requests, under real servers.

gunicorn (as documented: 2 workers x 2 threads, or as stated) and
``sushy-kubevirt-emulator`` (waitress) serve the emulator; the streams
are read by requests, or not at all by a raw socket.
"""

import os
import select
import socket
import sys
import threading
import time

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.events import conftest
from tests.functional.events import sse
from tests.functional import latency

BIN = os.path.dirname(sys.executable)
SEND_TIMEOUT = 2
USERS = {'alice': 'alice-password', 'bob': 'bob-password'}


def _config(sim, tmp_path, **extra):
    kubeconfig = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    return harness.write_config(tmp_path / 'emulator.conf', kubeconfig,
                                **dict(conftest.EVENTS, **extra))


def _gunicorn(config, tmp_path, workers, threads):
    port = harness.free_port()
    return harness.Process(
        [os.path.join(BIN, 'gunicorn'), '-w', str(workers), '--threads',
         str(threads), '-b', '127.0.0.1:%d' % port, '--graceful-timeout',
         '5', 'sushy_tools.emulator.main:app'], port,
        str(tmp_path / 'gunicorn.log'), {'SUSHY_EMULATOR_CONFIG': config})


@pytest.fixture
def process():
    started = []
    yield lambda proc: started.append(proc) or proc.start().wait_ready(
        path='/redfish/v1/')
    for proc in started:
        proc.stop()


def _paths(sim):
    return [conftest.system_path(sim, 'vm-%05d' % n) for n in range(8)]


def _retry_after(answer):
    return answer.status_code == 503 and \
        int(answer.headers['Retry-After']) > 0 and \
        answer.json()['error']['@Message.ExtendedInfo'][0][
            'MessageId'].endswith('.ServiceTemporarilyUnavailable')


def _served_or_refused(answer):
    """200, or a 503 with Retry-After (its body read)."""
    if answer.status_code != 200:
        answer.content
    return answer.status_code == 200 or _retry_after(answer)


def test_plain_gets_keep_their_latency_beside_5_streams(sim, tmp_path,
                                                        process):
    url = process(harness.emulator_process('gunicorn', _config(
        sim, tmp_path), tmp_path)).url
    paths = _paths(sim)
    before = latency.gets(url, paths)
    answers, done = [], threading.Event()

    def stream():
        try:
            with sse.Stream(url, timeout=(5, 10)) as opened:
                answers.append((opened.response.status_code,
                                _served_or_refused(opened.response)))
                done.wait(60)
        except requests.RequestException as exc:
            answers.append((exc, False))
    streams = [threading.Thread(target=stream) for _ in range(5)]
    for thread in streams:
        thread.start()
    deadline = time.monotonic() + 12
    while len(answers) < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        loud = latency.gets(url, paths)
    finally:
        done.set()
        for thread in streams:
            thread.join(20)
    after = latency.gets(url, paths)
    latency.assert_kept(loud, before, after)
    assert [code for code, _ in answers].count(200) >= 1, answers
    assert len(answers) == 5 and all(ok for _, ok in answers), answers


def _server_side(port, client_port):
    """(state, bytes unsent) of the server's end of a connection.

    (None, 0) when not found: the table may change as it is read.
    """
    with open('/proc/net/tcp') as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if fields[1].endswith(':%04X' % port) and \
                    fields[2].endswith(':%04X' % client_port):
                return fields[3], int(fields[4].split(':')[0], 16)
    return None, 0


def _stream_opens(url, auth=None):
    with sse.Stream(url, auth=auth, timeout=(5, 10)) as stream:
        return stream.response.status_code


@pytest.mark.skipif(backend.REAL, reason="fills a loopback connection's "
                    'buffers (about 5,000 events): a real control plane '
                    'makes 8 edits a second, the simulator 500')
@pytest.mark.parametrize('mode', ['gunicorn', 'sushy-kubevirt-emulator'])
def test_a_stream_whose_client_reads_nothing_ends(sim, tmp_path, process,
                                                  mode):
    config = _config(sim, tmp_path,
                     SUSHY_EMULATOR_KUBEVIRT_EVENTS_SSE_STREAMS=1,
                     SUSHY_EMULATOR_KUBEVIRT_EVENTS_SSE_SEND_TIMEOUT=(
                         SEND_TIMEOUT))
    proc = harness.emulator_process(mode, config, tmp_path) \
        if mode != 'gunicorn' else _gunicorn(config, tmp_path, 1, 2)
    url = process(proc).url
    conftest.wait_leader([url])   # its EventService watches
    port = int(url.rpartition(':')[2])
    with socket.create_connection(('127.0.0.1', port)) as client:
        client.sendall(b'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n'
                       b'Accept: text/event-stream\r\n\r\n'
                       % sse.URI.encode())
        client_port = client.getsockname()[1]
        assert select.select([client], [], [], 10)[0], 'no answer'
        # The one stream this process serves is taken.
        assert requests.get(url + sse.URI, timeout=10).status_code == 503
        # Events until the connection's buffers are full and the server
        # ends the stream; when the unsent bytes last grew, and when it
        # ended.
        # At most 500 events a second: the stream's 1,000 waiting events,
        # which would end it too, take longer than SEND_TIMEOUT.
        grew, unsent, edits = time.monotonic(), 0, 0
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            for _ in range(50):
                edits += 1
                conftest.edit_cores(sim, 'vm-%05d' % (edits % 8),
                                    1 + edits % 7)
            time.sleep(0.1)
            state, now_unsent = _server_side(port, client_port)
            if state not in (None, '01'):   # no longer ESTABLISHED
                break
            if now_unsent != unsent:
                grew, unsent = time.monotonic(), now_unsent
        ended = time.monotonic()
        assert state not in (None, '01'), 'the stream went on (%d ' \
            'events, %d bytes unsent)' % (edits, unsent)
        assert ended - grew <= SEND_TIMEOUT + 3, (ended - grew, unsent)
    # Its thread is free: the next stream is served.
    harness.wait_until(lambda: _stream_opens(url) == 200, 10, 0.2,
                       'a stream served')
    assert 'Event stream ended: its client read nothing for' in proc.log()


def test_an_account_holds_at_most_its_streams(sim, tmp_path, process):
    htpasswd = tmp_path / 'htpasswd'
    htpasswd.write_text(''.join('%s:%s\n' % (user, bcrypt.hashpw(
        password.encode(), bcrypt.gensalt(4)).decode())
        for user, password in USERS.items()))
    config = _config(sim, tmp_path, SUSHY_EMULATOR_AUTH_FILE=str(htpasswd),
                     SUSHY_EMULATOR_KUBEVIRT_EVENTS_SSE_STREAMS_PER_ACCOUNT=2)
    url = process(_gunicorn(config, tmp_path, 1, 8)).url
    alice, bob = (tuple(item) for item in USERS.items())
    with sse.Stream(url, auth=alice) as first, \
            sse.Stream(url, auth=alice) as second:
        assert first.response.status_code == 200
        assert second.response.status_code == 200
        with requests.get(url + sse.URI, auth=alice, timeout=10,
                          stream=True) as refused:
            assert _retry_after(refused), refused.status_code
            assert 'Account alice holds 2 event streams' in \
                refused.json()['error']['message']
        with sse.Stream(url, auth=bob) as other:
            assert other.response.status_code == 200
    # Closed, they are hers again within seconds (the hang-up is polled),
    # not at the next keepalive (15 s) or the one after.
    harness.wait_until(lambda: _stream_opens(url, alice) == 200, 6, 0.2,
                       "alice's streams closed")
