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

from sushy_kubevirt.kube import limiter


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_burst_then_rate():
    clock = FakeClock()
    bucket = limiter.TokenBucket(10, 3, clock=clock, sleep=clock.sleep)
    assert [bucket.acquire() for _ in range(3)] == [0, 0, 0]
    assert bucket.acquire() == 0.1
    assert clock.slept == [0.1]


def test_refills_up_to_burst_only():
    clock = FakeClock()
    bucket = limiter.TokenBucket(1, 2, clock=clock, sleep=clock.sleep)
    bucket.acquire()
    bucket.acquire()
    clock.now += 100
    assert [bucket.acquire() for _ in range(2)] == [0, 0]
    assert bucket.acquire() == 1.0


def test_waiters_queue_in_order():
    clock = FakeClock()
    bucket = limiter.TokenBucket(2, 1, clock=clock, sleep=clock.sleep)
    assert bucket.reserve() == 0
    assert bucket.reserve() == 0.5
    assert bucket.reserve() == 1.0


def test_take_never_waits_nor_queues():
    clock = FakeClock()
    bucket = limiter.TokenBucket(0.5, 2, clock=clock, sleep=clock.sleep)
    assert [bucket.take() for _ in range(3)] == [True, True, False]
    clock.now += 1.5
    assert [bucket.take() for _ in range(2)] == [False, False]
    clock.now += 0.5
    assert bucket.take() and not bucket.take()
    assert clock.slept == []


def test_rejects_bad_settings():
    for qps, burst in ((0, 1), (1, 0)):
        try:
            limiter.TokenBucket(qps, burst)
        except ValueError:
            continue
        raise AssertionError('accepted qps=%s burst=%s' % (qps, burst))
