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

from tests.functional.emulator import harness
from tests.functional.events import receiver as receivermod

from sushy_kubevirt import config
from sushy_kubevirt.drivers import delivery
from sushy_kubevirt.drivers import subscriptions
from sushy_kubevirt.kubevirt import imageurl

SETTINGS = config.Events(namespace='default', retry_attempts=2,
                         retry_interval=0, timeout=5.0, queue_size=3)


def _sender(url, settings=SETTINGS):
    sub = subscriptions.Subscription(id='s', destination=url)
    return delivery.Sender(sub, settings, imageurl.Policy(), lambda: True,
                           (0, 0))


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


def test_order_and_a_full_queue_drops_without_blocking():
    with Stalling() as slow, receivermod.Receiver() as fast:
        stuck = _sender(slow.url)
        sender = _sender(fast.url, SETTINGS.__class__(
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


def test_failures_are_retried_then_given_up():
    with receivermod.Receiver(status=500) as failing:
        sender = _sender(failing.url)
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
