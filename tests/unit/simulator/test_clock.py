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

"""Unit tests: the keyed scheduler (events, no timing assertions)."""

import threading

from sushy_kubevirt.simulator import clock


def run(scheduler, calls):
    done = threading.Event()
    scheduler.call_later(0.0, done.set)
    assert done.wait(5)
    return calls


def test_calls_run_in_due_order():
    # Scheduled before the thread starts: 2 simulated seconds are 2 ms,
    # which a loaded machine can spend between two call_later calls.
    sched = clock.Scheduler(clock.Clock(time_scale=1000))
    calls = []
    sched.call_later(2.0, lambda: calls.append('late'))
    sched.call_later(0.0, lambda: calls.append('now'))
    done = threading.Event()
    sched.call_later(3.0, done.set)
    sched.start()
    try:
        assert done.wait(5)
    finally:
        sched.stop()
    assert calls == ['now', 'late']


def test_a_key_is_pending_once_with_the_earliest_time():
    sched = clock.Scheduler(clock.Clock(time_scale=1000))
    calls = []
    sched.call_later(1.0, lambda: calls.append('a'), key='k')
    sched.call_later(5.0, lambda: calls.append('b'), key='k')
    sched.call_later(0.5, lambda: calls.append('c'), key='k')
    sched.start()
    try:
        done = threading.Event()
        sched.call_later(10.0, done.set)
        assert done.wait(5)
    finally:
        sched.stop()
    assert calls == ['c']


def test_a_failing_callback_does_not_stop_the_thread():
    sched = clock.Scheduler(clock.Clock()).start()
    try:
        sched.call_later(0, lambda: 1 / 0)
        assert run(sched, []) == []
    finally:
        sched.stop()


def test_stop_is_idempotent_and_drops_pending_calls():
    sched = clock.Scheduler(clock.Clock()).start()
    calls = []
    sched.call_later(60, lambda: calls.append(1))
    sched.stop()
    sched.stop()
    sched.call_later(0, lambda: calls.append(2))
    assert calls == []


def test_clock_scales_delays():
    assert clock.Clock(time_scale=10).real_seconds(180) == 18.0
    assert clock.Clock().real_seconds(-1) == 0.0


def test_stage_delays_match_names_case_insensitively():
    delays = clock.stage_delays({'Running': 0.5, 'Shutdown': None},
                                {'running': '2', 'ImportScheduled': 1})
    assert delays == {'Running': 2.0, 'Shutdown': None}
