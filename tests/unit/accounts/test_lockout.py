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

"""Account lockout and the check throttle, with fake clocks."""

import base64
import threading

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


def test_threshold_locks_the_client_out_even_with_the_right_password(
        clock):
    locks = _lockout(clock, threshold=3, duration=30, reset_after=10)
    for _ in range(3):
        assert locks.attempt('admin', 'stranger', False) is False
    assert locks.attempt('admin', 'stranger', True) is False      # locked
    assert locks.flush()
    writes = len(locks.cluster.patches)
    assert locks.attempt('admin', 'stranger', False) is False
    assert locks.flush()
    assert len(locks.cluster.patches) == writes       # no write when locked
    assert locks.attempt('admin', 'owner', True) is True   # others are not
    clock[0] += 31
    assert locks.attempt('admin', 'stranger', True) is True
    assert locks.attempt('admin', 'stranger', True) is True


def test_counter_resets_after_quiet_period_and_success(clock):
    locks = _lockout(clock, threshold=3, duration=30, reset_after=10)
    locks.attempt('admin', 'c', False)
    locks.attempt('admin', 'c', False)
    clock[0] += 11
    locks.attempt('admin', 'c', False)
    locks.attempt('admin', 'c', False)
    assert locks.attempt('admin', 'c', True) is True  # 2 in a row only
    locks.attempt('admin', 'c', False)
    locks.attempt('admin', 'c', False)
    assert locks.attempt('admin', 'c', True) is True  # reset by success
    assert locks.flush()
    writes = locks.cluster.calls
    clock[0] += 2
    assert locks.attempt('admin', 'c', True) is True
    assert locks.flush()
    assert locks.cluster.calls == writes + 1          # one read, no write


def test_the_account_wide_count_spares_the_clients_that_logged_in(clock):
    locks = _lockout(clock, threshold=2, duration=30, reset_after=30,
                     all_clients=4)
    assert locks.attempt('admin', 'owner', True) is True
    for client in ('a', 'a', 'b', 'c'):                # 4 from 3 clients
        assert locks.attempt('admin', client, False) is False
        assert locks.attempt('admin', 'owner', True) is True
    # Locked to every client that never logged in: no more guesses.
    assert locks.attempt('admin', 'd', True) is False
    assert locks.attempt('admin', 'c', True) is False
    assert locks.flush()
    writes = len(locks.cluster.patches)
    assert locks.attempt('admin', 'e', False) is False
    assert locks.flush()
    assert len(locks.cluster.patches) == writes
    assert locks.attempt('admin', 'owner', True) is True
    assert locks.attempt('other', 'd', True) is True  # other accounts
    # The owner's own failures still lock the owner out.
    for _ in range(2):
        assert locks.attempt('admin', 'owner', False) is False
    assert locks.attempt('admin', 'owner', True) is False
    clock[0] += 31
    assert locks.attempt('admin', 'd', True) is True


def test_the_owner_logging_in_does_not_reset_the_account_count(clock):
    locks = _lockout(clock, threshold=5, duration=60, reset_after=60,
                     all_clients=6)
    for index in range(6):
        assert locks.attempt('admin', 'owner', True) is True
        assert locks.attempt('admin', 'guesser-%d' % index, False) is False
    assert locks.attempt('admin', 'guesser-new', True) is False


def test_good_clients_are_bounded(clock):
    locks = _lockout(clock, threshold=1, duration=30, reset_after=30)
    for index in range(lockout.GOOD + 5):
        assert locks.attempt('admin', 'c%d' % index, True) is True
    entry = locks._entry('admin')
    assert entry['good'] == ['c%d' % i for i in range(5, lockout.GOOD + 5)]


def test_two_processes_share_the_count(clock):
    cluster = FakeCluster()
    one, two = (_lockout(clock, cluster, threshold=2, duration=30,
                         reset_after=30) for _ in range(2))
    assert one.attempt('admin', 'c', False) is False
    assert one.flush()
    assert two.attempt('admin', 'c', False) is False  # stale copy: conflict
    assert two.flush()
    clock[0] += lockout.REFRESH
    assert one.attempt('admin', 'c', True) is False
    assert one.attempt('admin', 'd', True) is True


class _Slow(FakeCluster):
    """Writes wait until ``opened`` is set."""

    def __init__(self):
        super().__init__()
        self.opened = threading.Event()

    def create_secret(self, namespace, body):
        assert self.opened.wait(30)
        return super().create_secret(namespace, body)

    patch_secret_fast = FakeCluster.patch_secret

    def patch_secret(self, namespace, name, ops):
        assert self.opened.wait(30)
        return self.patch_secret_fast(namespace, name, ops)


def test_a_refusal_waits_for_no_write_and_a_burst_still_locks(clock):
    """The counts are written after the answers; the process holds them."""
    cluster = _Slow()
    locks = _lockout(clock, cluster, threshold=3, duration=30,
                     reset_after=30)
    for _ in range(3):                  # answered while no write can end
        assert locks.attempt('admin', 'c', False) is False
    assert locks.attempt('admin', 'c', True) is False     # locked already
    assert locks.attempt('admin', 'd', True) is True
    assert locks.attempt(None, 'c', False) is False       # no account
    assert not cluster.secrets
    cluster.opened.set()
    assert locks.flush()
    assert len(cluster.patches) <= 2    # the burst in at most 2 writes
    other = _lockout(clock, cluster, threshold=3, duration=30,
                     reset_after=30)    # another worker: the same lockout
    assert other.attempt('admin', 'c', True) is False
    assert other.attempt('admin', 'd', True) is True


def test_a_name_that_is_no_account_costs_the_same_read(clock):
    locks = _lockout(clock, threshold=3, duration=30, reset_after=30)
    assert locks.attempt(None, 'c', False) is False
    assert locks.cluster.calls == 1                   # the read
    assert locks.attempt(None, 'c', False) is False
    clock[0] += lockout.REFRESH
    assert locks.attempt(None, 'c', False) is False
    assert locks.flush()
    assert locks.cluster.calls == 2 and not locks.cluster.secrets


def test_a_state_of_another_format_is_ignored(clock):
    cluster = FakeCluster()
    cluster.create_secret('default', {'metadata': {'name': lockout.NAME},
                                      'data': {lockout.DATA: base64.b64encode(
                                          b'{"admin": [9, 1000, 99999]}'
                                      ).decode()}})
    locks = _lockout(clock, cluster, threshold=2, duration=30,
                     reset_after=30)
    assert locks.attempt('admin', 'c', True) is True


def test_disabled_writes_nothing(clock):
    locks = _lockout(clock, threshold=0)
    for _ in range(10):
        assert locks.attempt('admin', 'c', False) is False
    assert locks.attempt('admin', 'c', True) is True
    assert locks.cluster.calls == 0


@pytest.mark.parametrize('settings', [
    {config.LOCKOUT_THRESHOLD_KEY: -1}, {config.LOCKOUT_DURATION_KEY: 'x'},
    {config.LOCKOUT_DURATION_KEY: 10,
     config.LOCKOUT_RESET_KEY: 20},
    {config.LOCKOUT_ALL_CLIENTS_KEY: 4}, {config.LOCKOUT_ALL_CLIENTS_KEY: -1},
    {config.LOCKOUT_THRESHOLD_KEY: 3, config.LOCKOUT_ALL_CLIENTS_KEY: 2}])
def test_bad_lockout_settings_name_the_key(settings):
    with pytest.raises(config.ConfigError, match='LOCKOUT'):
        lockout.policy(settings)


def test_the_account_wide_threshold_defaults_to_four_times_the_threshold():
    assert lockout.policy({}).all_clients == 20
    assert lockout.policy({config.LOCKOUT_THRESHOLD_KEY: 30}
                          ).all_clients == 120


def test_throttle_refuses_past_the_burst_and_forgets(clock):
    limiter = throttle.Throttle(throttle.Policy(rate=0.5, burst=2), size=3,
                                clock=lambda: clock[0])
    assert limiter.take('a') == 0
    assert limiter.take('a') == 0
    assert limiter.take('a') == 2
    assert limiter.take('b') == 0
    limiter.give_back('b')                            # a successful check
    clock[0] += 2
    assert limiter.take('a') == 0
    assert limiter.take('a') == 2
    for key in 'bcde':
        limiter.take(key)
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
    assert locks.attempt('admin', 'c', False) is False
    assert locks.attempt('admin', 'c', True) is True


class _Unplugged(FakeCluster):
    down = False

    def get_secret(self, namespace, name):
        if self.down:
            raise apierrors.Unavailable('down')
        return super().get_secret(namespace, name)


def test_while_unreachable_the_last_state_read_applies(clock):
    cluster = _Unplugged()
    locks = _lockout(clock, cluster, threshold=1, duration=30,
                     reset_after=30)
    assert locks.attempt('admin', 'stranger', False) is False
    assert locks.flush()
    cluster.down = True
    clock[0] += lockout.REFRESH
    version = cluster.version
    assert locks.attempt('admin', 'stranger', True) is False
    assert locks.attempt('admin', 'owner', True) is True
    assert locks.attempt('admin', 'owner', False) is False
    assert locks.flush()
    assert cluster.version == version                 # nothing written
