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

"""One sender across gunicorn workers and replicas; failover of the Lease."""

import collections
import itertools
import json
import os
import signal
import time

import pytest
from tests.functional.emulator import harness
from tests.functional.events import conftest

DURATION = conftest.EVENTS['SUSHY_EMULATOR_KUBEVIRT_EVENTS_LEASE_DURATION']
_CORES = itertools.count(100)
RENEW = conftest.EVENTS['SUSHY_EMULATOR_KUBEVIRT_EVENTS_RENEW_PERIOD']


def _all_candidates(urls, count, timeout=60.0):
    """Request until ``count`` processes have joined the election.

    A gunicorn worker joins at its first request; which worker accepts a
    connection is up to the kernel, and on a loaded machine one worker can
    serve hundreds of requests while the other still boots, so ask until
    both did, for at most ``timeout`` seconds.
    """
    seen = {}

    def joined():
        for url in urls:
            seen.update(conftest.candidates(url))
        return len(seen) >= count
    try:
        harness.wait_until(joined, timeout, 0.02, 'processes joined')
    except AssertionError:
        raise AssertionError('only %d of %d processes joined: %s'
                             % (len(seen), count, seen)) from None
    return seen


def _no_duplicates(receiver):
    ids = collections.Counter(e['EventId'] for e in receiver.events())
    assert [i for i, n in ids.items() if n > 1] == []


def _exactly_once(sim, urls, receiver, name):
    conftest.subscribe(urls[0], receiver.url)
    path = conftest.system_path(sim, name)
    conftest.reset(urls[-1], path, 'On')
    receiver.wait(lambda r: r.matching(path, 'ResourcePoweredOn'))
    conftest.edit_cores(sim, name, 4)
    receiver.wait(lambda r: r.matching(path, 'ResourceChanged'))
    marker = conftest.system_path(sim, 'vm-00007')
    conftest.edit_cores(sim, 'vm-00007', next(_CORES))
    receiver.wait(lambda r: r.matching(marker, 'ResourceChanged'))
    assert len(receiver.matching(path, 'ResourcePoweredOn')) == 1
    assert len(receiver.matching(path, 'ResourceChanged')) == 1
    _no_duplicates(receiver)


def test_two_gunicorn_workers_deliver_once(sim, config_file, receiver,
                                           tmp_path):
    process = harness.emulator_process('gunicorn', config_file, tmp_path)
    try:
        process.start().wait_ready()
        _all_candidates([process.url], 2)
        assert len([v for v in _all_candidates([process.url], 2).values()
                    if v]) <= 1
        _exactly_once(sim, [process.url], receiver, 'vm-00001')
    finally:
        process.stop()


@pytest.fixture
def two(config_file, tmp_path):
    processes = [harness.emulator_process(
        'sushy-kubevirt-emulator', config_file, tmp_path / str(i))
        for i in range(2)]
    try:
        for index, process in enumerate(processes):
            os.makedirs(tmp_path / str(index))
            process.start()
        for process in processes:
            process.wait_ready()
        _all_candidates([p.url for p in processes], 2)
        conftest.wait_leader([p.url for p in processes])
        yield processes
    finally:
        for process in processes:
            process.stop()


def test_two_replicas_deliver_once(sim, two, receiver):
    _exactly_once(sim, [p.url for p in two], receiver, 'vm-00002')


def _checkpoint(sim):
    lease = conftest.lease(sim)
    return json.loads(lease['metadata']['annotations'][
        'sushy-kubevirt.io/checkpoint'])


def test_failover_when_the_leader_dies(sim, two, receiver):
    """Kill -9 the Lease holder: the other replica sends within the Lease.

    An event delivered and checkpointed before the kill is not sent again;
    one made right after the kill (nobody leads) is delivered once.
    """
    sub_id = conftest.subscribe(two[0].url, receiver.url).json()['Id']
    before = conftest.system_path(sim, 'vm-00003')
    after = conftest.system_path(sim, 'vm-00004')
    conftest.edit_cores(sim, 'vm-00003', 6)
    first, = receiver.wait(lambda r: r.matching(before, 'ResourceChanged'))
    key = [int(part) for part in first['EventId'].split('.')]
    harness.wait_until(lambda: _checkpoint(sim).get(sub_id, [0]) >= key,
                       10, 0.1, 'checkpoint written')
    spec = conftest.lease(sim)['spec']
    holder = spec['holderIdentity']
    leader, = [p for p in two if '_%d_' % p.proc.pid in holder]
    other, = [p for p in two if p is not leader]
    os.killpg(leader.proc.pid, signal.SIGKILL)
    leader.proc.wait(10)
    killed = time.monotonic()
    conftest.edit_cores(sim, 'vm-00004', 6)
    second, = receiver.wait(lambda r: r.matching(after, 'ResourceChanged'),
                            timeout=DURATION + 10)
    took = receiver.posts[-1][0] - killed
    assert took < DURATION + 4 * RENEW + 2, took
    now = conftest.lease(sim)['spec']
    assert now['holderIdentity'] != holder
    assert '_%d_' % other.proc.pid in now['holderIdentity']
    assert now['leaseTransitions'] == spec['leaseTransitions'] + 1
    assert any(conftest.candidates(other.url).values())
    assert len(receiver.matching(before, 'ResourceChanged')) == 1
    _no_duplicates(receiver)


def test_a_clean_stop_hands_over_without_waiting(sim, two, receiver):
    """SIGTERM: the leader releases the Lease; the other need not wait."""
    conftest.subscribe(two[0].url, receiver.url)
    path = conftest.system_path(sim, 'vm-00005')
    holder = conftest.lease(sim)['spec']['holderIdentity']
    leader, = [p for p in two if '_%d_' % p.proc.pid in holder]
    other, = [p for p in two if p is not leader]
    leader.stop()
    stopped = time.monotonic()
    # Released: empty, or already the other replica's.
    assert '_%d_' % leader.proc.pid not in conftest.lease(sim)['spec'][
        'holderIdentity']
    conftest.edit_cores(sim, 'vm-00005', 9)
    receiver.wait(lambda r: r.matching(path, 'ResourceChanged'),
                  timeout=DURATION + 10)
    # A dead leader's Lease is only taken after DURATION.
    assert receiver.posts[-1][0] - stopped < DURATION
    assert '_%d_' % other.proc.pid in conftest.lease(sim)['spec'][
        'holderIdentity']
    _no_duplicates(receiver)
