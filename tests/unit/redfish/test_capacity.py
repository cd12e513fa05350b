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

"""Slots of long requests, and a stream's end when nothing is read."""

import socket
import threading
import time

import pytest

from sushy_kubevirt import messages
from sushy_kubevirt.redfish import capacity
from sushy_kubevirt.redfish import sse


def _refused(limit, account, threads=None):
    with pytest.raises(messages.RedfishError) as caught:
        limit.acquire(account, threads)
    assert caught.value.code == 503
    assert caught.value.message_id == 'ServiceTemporarilyUnavailable'
    assert int(caught.value.headers['Retry-After']) == limit.retry_after
    return str(caught.value)


def _waiting(limit, account):
    """A thread waiting for a slot; its outcome in ``thread.outcome``."""
    def wait():
        try:
            limit.acquire(account, None)
            thread.outcome = 'ran'
        except messages.RedfishError:
            thread.outcome = 'refused'
    queued = len(limit.queue)
    thread = threading.Thread(target=wait)
    thread.outcome = None
    thread.start()
    deadline = time.monotonic() + 5
    while len(limit.queue) == queued and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(limit.queue) == queued + 1, 'not waiting'
    return thread


def test_per_process_and_per_account():
    limit = capacity.Limit('things', 2, 1)
    limit.acquire('a', None)
    assert 'Account a holds 1 things' in _refused(limit, 'a')
    limit.acquire(None, None)   # no account: no bound of its own
    assert '2 things are open' in _refused(limit, 'b')
    limit.release('a')
    limit.acquire('b', None)
    limit.release('b')
    limit.release(None)
    assert not limit.running


def test_every_limit_leaves_a_thread_to_plain_requests():
    streams = capacity.Limit('streams', 5, 5)
    expansions = capacity.Limit('expansions', 5, 5)
    streams.acquire('a', 3)
    expansions.acquire('b', 3)
    assert 'with 3 thread(s)' in _refused(streams, 'c', 3)
    assert 'with 3 thread(s)' in _refused(expansions, 'c', 3)
    streams.acquire('c', None)   # unknown threads: the limit alone
    for limit, account in ((streams, 'a'), (expansions, 'b'),
                           (streams, 'c')):
        limit.release(account)


def test_a_single_thread_serves_brief_requests_only():
    streams = capacity.Limit('streams', 5, 5)
    expansions = capacity.Limit('expansions', 5, 5, brief=True)
    assert 'with 1 thread(s)' in _refused(streams, 'a', 1)
    expansions.acquire('a', 1)
    assert 'with 1 thread(s)' in _refused(expansions, 'b', 1)
    expansions.release('a')


def test_waiters_run_in_turn_past_a_busy_account():
    limit = capacity.Limit('things', 2, 1, waiting=2, wait=10.0)
    limit.acquire('a', None)
    limit.acquire('b', None)
    second_of_a = _waiting(limit, 'a')
    other = _waiting(limit, 'c')
    assert 'Account a holds 1 things' in _refused(limit, 'a')
    # b's slot goes to c, though a's second came first: a holds one.
    limit.release('b')
    other.join(5)
    assert other.outcome == 'ran' and second_of_a.outcome is None
    limit.release('a')
    second_of_a.join(5)
    assert second_of_a.outcome == 'ran'
    limit.release('a')
    limit.release('c')


def test_a_waiter_is_refused_after_its_wait():
    limit = capacity.Limit('things', 1, 1, waiting=1, wait=0.2)
    limit.acquire('a', None)
    waiter = _waiting(limit, 'b')
    assert '1 things are open' in _refused(limit, 'c')
    waiter.join(5)
    assert waiter.outcome == 'refused'
    limit.release('a')
    limit.acquire('b', 2)   # the waiter's thread was given back
    limit.release('b')


def test_a_stream_whose_client_reads_nothing_ends():
    server, client = socket.socketpair()
    server.setblocking(False)
    closed = []

    def chunks():
        try:
            while True:
                yield b'x' * 1000
        finally:
            closed.append(True)
    started, sent = time.monotonic(), 0
    with server, client:
        for chunk in sse._sent(chunks(), server, 0.3):
            sent += server.send(chunk)
        assert closed and time.monotonic() - started < 10
        # Shut down: the client reads what was sent, then the end.
        client.settimeout(5)
        received = b''
        while True:
            data = client.recv(65536)
            if not data:
                break
            received += data
        assert len(received) == sent


def test_a_stream_whose_client_reads_goes_on():
    server, client = socket.socketpair()
    with server, client:
        stream = sse._sent((c for c in (b'a', b'b', b'c')), server, 0.3)
        for chunk in stream:
            server.sendall(chunk)
            assert client.recv(1) == chunk
        client.settimeout(0.1)
        with pytest.raises(socket.timeout):
            client.recv(1)   # not shut down
