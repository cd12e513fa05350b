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

"""Account lockout and the per-client throttle, with fake clocks."""

import pytest
from tests.unit.accounts.test_sessionstore import FakeCluster

from sushy_kubevirt.accounts import lockout
from sushy_kubevirt.accounts import throttle
from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors


@pytest.fixture
def clock():
    return [1000.0]


def _lockout(clock, cluster=None, **policy):
    return lockout.Lockout(cluster or FakeCluster(), 'default',
                           lockout.Policy(**policy), clock=lambda: clock[0],
                           monotonic=lambda: clock[0])


def test_threshold_locks_even_the_right_password(clock):
    locks = _lockout(clock, threshold=3, duration=30, reset_after=10)
    for _ in range(3):
        assert locks.attempt('admin', False) is False
    assert locks.attempt('admin', True) is False      # locked
    writes = len(locks.cluster.patches)
    assert locks.attempt('admin', False) is False
    assert len(locks.cluster.patches) == writes       # no write when locked
    clock[0] += 31
    assert locks.attempt('admin', True) is True
    assert locks.attempt('admin', True) is True


def test_counter_resets_after_quiet_period_and_success(clock):
    locks = _lockout(clock, threshold=3, duration=30, reset_after=10)
    locks.attempt('admin', False)
    locks.attempt('admin', False)
    clock[0] += 11
    locks.attempt('admin', False)
    locks.attempt('admin', False)
    assert locks.attempt('admin', True) is True       # 2 in a row only
    locks.attempt('admin', False)
    locks.attempt('admin', False)
    assert locks.attempt('admin', True) is True       # reset by success
    writes = locks.cluster.calls
    clock[0] += 2
    assert locks.attempt('admin', True) is True
    assert locks.cluster.calls == writes + 1          # one read, no write


def test_two_processes_share_the_count(clock):
    cluster = FakeCluster()
    one, two = (_lockout(clock, cluster, threshold=2, duration=30,
                         reset_after=30) for _ in range(2))
    assert one.attempt('admin', False) is False
    assert two.attempt('admin', False) is False       # stale copy: conflict
    clock[0] += lockout.REFRESH
    assert one.attempt('admin', True) is False


def test_disabled_writes_nothing(clock):
    locks = _lockout(clock, threshold=0)
    for _ in range(10):
        assert locks.attempt('admin', False) is False
    assert locks.attempt('admin', True) is True
    assert locks.cluster.calls == 0


@pytest.mark.parametrize('settings', [
    {config.LOCKOUT_THRESHOLD_KEY: -1}, {config.LOCKOUT_DURATION_KEY: 'x'},
    {config.LOCKOUT_DURATION_KEY: 10,
     config.LOCKOUT_RESET_KEY: 20}])
def test_bad_lockout_settings_name_the_key(settings):
    with pytest.raises(config.ConfigError, match='LOCKOUT'):
        lockout.policy(settings)


def test_throttle_refuses_past_the_burst_and_forgets(clock):
    limiter = throttle.Throttle(throttle.Policy(rate=0.5, burst=2), size=3,
                                clock=lambda: clock[0])
    assert limiter.retry_after('a') == 0
    limiter.failed('a')
    limiter.failed('a')
    assert limiter.retry_after('a') == 2
    assert limiter.retry_after('b') == 0
    clock[0] += 2
    assert limiter.retry_after('a') == 0
    for client in 'bcde':
        limiter.failed(client)
    assert len(limiter._buckets) <= 3


@pytest.mark.parametrize('settings', [
    {config.AUTH_FAILURE_RATE_KEY: 0}, {config.AUTH_FAILURE_BURST_KEY: 0},
    {config.AUTH_FAILURE_BURST_KEY: 1.5}])
def test_bad_throttle_settings_name_the_key(settings):
    with pytest.raises(config.ConfigError, match='AUTH_FAILURE'):
        throttle.policy(settings)


class _Down(FakeCluster):
    def get_secret(self, namespace, name):
        raise apierrors.Unavailable('down')

    patch_secret = create_secret = get_secret


def test_an_unreachable_api_server_leaves_the_passwords_checked(clock):
    locks = _lockout(clock, _Down(), threshold=1, duration=30,
                     reset_after=30)
    assert locks.attempt('admin', False) is False
    assert locks.attempt('admin', True) is True
