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

from sushy_kubevirt.kube import backoff


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_doubles_with_jitter_and_caps():
    clock = Clock()
    b = backoff.Backoff(0.8, cap=30, clock=clock, rand=lambda: 0.0)
    delays = [b.next() for _ in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30]


def test_jitter_within_d_2d_and_capped():
    clock = Clock()
    b = backoff.Backoff(0.8, cap=30, clock=clock, rand=lambda: 0.999)
    assert 1.59 < b.next() < 1.6
    assert all(b.next() <= 30 for _ in range(10))


def test_resets_after_healthy_spell():
    clock = Clock()
    b = backoff.Backoff(1.0, cap=30, reset_after=120, clock=clock,
                        rand=lambda: 0.0)
    assert [b.next(), b.next(), b.next()] == [1.0, 2.0, 4.0]
    clock.now += 119
    assert b.next() == 8.0
    clock.now += 120
    assert b.next() == 1.0


def test_reset_starts_again_from_initial():
    clock = Clock()
    b = backoff.Backoff(1.0, cap=4, reset_after=120, clock=clock,
                        rand=lambda: 0.0)
    assert [b.next(), b.next(), b.next(), b.next()] == [1.0, 2.0, 4.0, 4]
    b.reset()
    assert [b.next(), b.next()] == [1.0, 2.0]


def test_capped_delays_keep_a_jitter():
    clock = Clock()
    b = backoff.Backoff(1.0, cap=3, clock=clock, rand=lambda: 0.5)
    assert [b.next(), b.next(), b.next()] == [1.5, 3.0, 2.25]
