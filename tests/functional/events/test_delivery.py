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

"""Senders against real receivers: order, retries, full queues."""

import threading
import time

import pytest
from tests.functional.emulator import harness
from tests.functional.events import receiver as receivermod

from sushy_kubevirt import config
from sushy_kubevirt.events import delivery
from sushy_kubevirt.events import subscriptions
from sushy_kubevirt import imagecheck
from sushy_kubevirt.kubevirt import imageurl

SETTINGS = config.Events(namespace='default', retry_attempts=2,
                         retry_interval=0, timeout=5.0, queue_size=3)


@pytest.fixture
def pool():
    workers = delivery.Pool(4)
    yield workers
    workers.stop()


def _sender(pool, url, settings=SETTINGS):
    sub = subscriptions.Subscription(id='s', destination=url)
    return delivery.Sender(sub, settings, imageurl.Policy(), lambda: True,
                           (0, 0), pool)


def _record(n):
    return {'EventId': '%d.0' % n, 'MessageId': 'ResourceEvent.1.4.2.X'}


class Stalling(receivermod.Receiver):
    """A receiver whose answers wait until ``release`` is set."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        handler = self._server.RequestHandlerClass
        post = handler.do_POST

        def do_post(request):
            self.release.wait(20)
            post(request)
        handler.do_POST = do_post


def test_order_and_a_full_queue_drops_without_blocking(pool):
    with Stalling() as slow, receivermod.Receiver() as fast:
        stuck = _sender(pool, slow.url)
        sender = _sender(pool, fast.url, SETTINGS.__class__(
            namespace='default', queue_size=100))
        try:
            stuck.offer((1, 0), _record(1))
            started = time.monotonic()
            for n in range(2, 12):
                stuck.offer((n, 0), _record(n))
                sender.offer((n, 0), _record(n))
            assert time.monotonic() - started < 0.5  # offers never block
            # The other subscriber is not held up by the stalled one.
            fast.wait(lambda r: len(r.events()) == 10)
            assert [e['EventId'] for e in fast.events()] == [
                '%d.0' % n for n in range(2, 12)]
            # 1 in flight, 3 queued, the rest dropped and counted.
            assert stuck.counts['dropped'] >= 11 - 1 - 3
            slow.release.set()
            slow.wait(lambda r: len(r.events()) >= 11 - stuck.counts[
                'dropped'])
            ids = [int(e['EventId'].split('.')[0]) for e in slow.events()]
            assert ids == sorted(ids) and ids[0] == 1
            # Done once the receiver's answer is back, after it counted.
            harness.wait_until(lambda: sender.done == (11, 0), 20, 0.01,
                               'the last event done')
        finally:
            stuck.stop()
            sender.stop()


def test_failures_are_retried_then_given_up(pool):
    with receivermod.Receiver(status=500) as failing:
        sender = _sender(pool, failing.url)
        try:
            sender.offer((1, 0), _record(1))
            failing.wait(lambda r: len(r.posts) == 3)
            harness.wait_until(lambda: sender.counts['failed'], 20, 0.01,
                               'given up')
            assert dict(sender.counts) == {'retried': 2, 'failed': 1}
            assert sender.done == (1, 0)  # given up: not sent again
            failing.status = 204
            sender.offer((2, 0), _record(2))
            failing.wait(lambda r: len(r.posts) == 4)
        finally:
            sender.stop()


@pytest.fixture
def resolver(monkeypatch):
    """Names of ``*.test`` resolve to 127.0.0.1 here, and only here."""
    real = imagecheck.resolve
    lookups = []

    def resolve(host, port, deadline):
        if not host.endswith('.test'):
            return real(host, port, deadline)
        lookups.append(host)
        return ['127.0.0.1']
    monkeypatch.setattr(imagecheck, 'resolve', resolve)
    return lookups


def test_the_post_goes_to_the_checked_address(pool, resolver):
    """The name is resolved once, by the check; Host names it."""
    with receivermod.Receiver() as receiver:
        sender = _sender(pool,
                         'http://receiver.test:%d/events' % receiver.port)
        try:
            sender.offer((1, 0), _record(1))
            receiver.wait(lambda r: r.posts)
            assert receiver.posts[0][1]['Host'] == \
                'receiver.test:%d' % receiver.port
            assert resolver == ['receiver.test']
        finally:
            sender.stop()


def test_https_is_verified_against_the_destination_name(pool, resolver,
                                                        monkeypatch):
    monkeypatch.setenv('REQUESTS_CA_BUNDLE', receivermod.CA)
    with receivermod.Receiver(tls=True) as receiver:
        good = _sender(pool,
                       'https://receiver.test:%d/events' % receiver.port)
        # Same address, another name: the certificate does not match.
        bad = _sender(pool, 'https://other.test:%d/events' % receiver.port)
        try:
            good.offer((1, 0), _record(1))
            receiver.wait(lambda r: r.posts)
            assert receiver.posts[0][1]['Host'] == \
                'receiver.test:%d' % receiver.port
            bad.offer((1, 0), _record(1))
            harness.wait_until(lambda: bad.counts['failed'], 10, 0.01,
                               'the mismatch given up')
            assert len(receiver.posts) == 1
            assert bad.counts['delivered'] == 0
        finally:
            good.stop()
            bad.stop()
