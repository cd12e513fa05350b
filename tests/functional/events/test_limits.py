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

"""Bounds of the EventService: subscriptions, threads, pinned addresses."""

import concurrent.futures
import errno
import socket
import threading

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.events import conftest
from tests.functional.events import receiver as receivermod

from sushy_kubevirt.events import subscriptions

SUBS = conftest.SUBSCRIPTIONS
TEST_EVENT = '/redfish/v1/EventService/Actions/EventService.SubmitTestEvent'
WORKERS = 4
CAP = 3


def _config(tmp_path, sim, **extra):
    kubeconfig = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    settings = dict(conftest.EVENTS, **extra)
    return harness.write_config(tmp_path / 'emulator.conf', kubeconfig,
                                **settings)


@pytest.fixture
def bounded(sim, tmp_path):
    """One emulator process with WORKERS delivery workers, the leader."""
    config = _config(
        tmp_path, sim,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_WORKERS=WORKERS,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_MAX_SUBSCRIPTIONS=200,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_TIMEOUT=60,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_RETRY_ATTEMPTS=0)
    process = harness.emulator_process('sushy-kubevirt-emulator', config,
                                       tmp_path)
    try:
        process.start().wait_ready()
        conftest.wait_leader([process.url])
        yield process
    finally:
        process.stop()


@pytest.fixture(autouse=True)
def no_subscriptions(sim):
    yield
    rt = sim.store.resource('', 'secrets')
    for secret in sim.store.list(rt, 'default')[0]:
        meta = secret['metadata']
        if subscriptions.LABEL in (meta.get('labels') or {}):
            sim.store.delete(rt, 'default', meta['name'])


def _threads(pid):
    with open('/proc/%d/status' % pid) as status:
        for line in status:
            if line.startswith('Threads:'):
                return int(line.split()[1])
    raise AssertionError('no Threads in /proc/%d/status' % pid)


def _post(url, path, body):
    # A connection per request: no server thread outlives its request.
    return requests.post(url + path, json=body, timeout=30,
                         headers={'Connection': 'close'})


def _subscribe(url, destination, context='ctx'):
    answer = _post(url, SUBS, {'Destination': destination,
                               'Context': context})
    assert answer.status_code == 201, answer.text
    return answer.json()['Id']


def test_test_events_to_hanging_subscribers_spawn_no_threads(bounded):
    """60 SubmitTestEvent x 5 subscribers that never answer."""
    hanging = [receivermod.Hanging() for _ in range(5)]
    for receiver in hanging:
        receiver.__enter__()
    try:
        for receiver in hanging:
            _subscribe(bounded.url, receiver.url)
        before = _threads(bounded.proc.pid)
        for n in range(60):
            answer = _post(bounded.url, TEST_EVENT, {
                'MessageId': 'ResourceEvent.1.4.2.ResourceChanged',
                'EventId': 'test-%d' % n})
            assert answer.status_code == 204, answer.text
        # Every worker is now stuck in a POST that gets no answer.
        harness.wait_until(
            lambda: sum(len(r.accepted) for r in hanging) >= WORKERS,
            30, 0.1, 'the workers connected')
        after = _threads(bounded.proc.pid)
        assert after - before <= WORKERS + 2, (before, after)
        metrics = requests.get(bounded.url + '/metrics', timeout=10).text
        # The other events wait in the subscribers' queues.
        assert 'sushy_kubevirt_events_queued %d' % (
            60 * 5 - WORKERS) in metrics, metrics
    finally:
        for receiver in hanging:
            receiver.__exit__(None, None, None)


def test_many_subscriptions_need_no_thread_each(sim, bounded, receiver):
    before = _threads(bounded.proc.pid)
    count = 60
    for n in range(count):
        _subscribe(bounded.url, receiver.url, 'sub-%d' % n)
    path = conftest.system_path(sim, 'vm-00006')
    conftest.edit_cores(sim, 'vm-00006', 7)
    # The leader delivers the change to every subscription.
    receiver.wait(lambda r: len({
        post[2]['Context'] for post in r.posts
        if post[2]['Events'][0]['OriginOfCondition']['@odata.id'] == path
    }) == count, timeout=60)
    after = _threads(bounded.proc.pid)
    assert after - before <= WORKERS + 2, (before, after)


@pytest.fixture
def capped(sim, tmp_path):
    """2 gunicorn workers sharing a cap of CAP subscriptions."""
    config = _config(tmp_path, sim,
                     SUSHY_EMULATOR_KUBEVIRT_EVENTS_MAX_SUBSCRIPTIONS=CAP)
    process = harness.emulator_process('gunicorn', config, tmp_path)
    try:
        process.start().wait_ready()
        yield process
    finally:
        process.stop()


def _members(url):
    return requests.get(url + SUBS, timeout=10).json()['Members']


def test_the_cap_holds_across_workers(capped, receiver):
    """Concurrent creations on 2 workers: exactly CAP are kept."""
    for member in _members(capped.url):
        requests.delete(capped.url + member['@odata.id'], timeout=10)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: _post(capped.url, SUBS, {
            'Destination': receiver.url, 'Context': 'c%d' % n}), range(8)))
    codes = sorted(a.status_code for a in answers)
    assert codes == [201] * CAP + [409] * (8 - CAP), [a.text
                                                      for a in answers]
    refused = [a for a in answers if a.status_code == 409]
    info = refused[0].json()['error']['@Message.ExtendedInfo'][0]
    assert info['MessageId'].endswith('.EventSubscriptionLimitExceeded')
    created = {a.json()['Id'] for a in answers if a.status_code == 201}
    members = _members(capped.url)
    assert {m['@odata.id'].rpartition('/')[2] for m in members} == created
    # Room again once one is deleted.
    assert requests.delete(capped.url + members[0]['@odata.id'],
                           timeout=10).status_code == 204
    assert _post(capped.url, SUBS, {'Destination': receiver.url}
                 ).status_code == 201
    assert _post(capped.url, SUBS, {'Destination': receiver.url}
                 ).status_code == 409
    assert len(_members(capped.url)) == CAP


REBIND = 'rebind.test'


@pytest.fixture
def rebinding(monkeypatch):
    """``rebind.test``: 127.0.0.1 for two lookups, then 127.0.0.2.

    What a DNS rebinding attacker answers; every other name resolves as
    usual. (No resolver outside this process can be changed by a test.)
    """
    real = socket.getaddrinfo
    lookups = []
    lock = threading.Lock()

    def getaddrinfo(host, port, *args, **kwargs):
        if host != REBIND:
            return real(host, port, *args, **kwargs)
        with lock:
            lookups.append(host)
            address = '127.0.0.1' if len(lookups) <= 2 else '127.0.0.2'
        return real(address, port, *args, **kwargs)
    monkeypatch.setattr(socket, 'getaddrinfo', getaddrinfo)
    return lookups


def _same_port_pair(attempts=20):
    """Receivers on 127.0.0.1 and 127.0.0.2 that share one free port.

    The port is free on the first address when picked; another process may
    hold it on the second, so a taken one is given up and another tried.
    """
    for _ in range(attempts):
        checked = receivermod.Receiver()
        try:
            return checked, receivermod.Receiver(host='127.0.0.2',
                                                 port=checked.port)
        except OSError as exc:
            checked.close()
            if exc.errno != errno.EADDRINUSE:
                raise
    raise AssertionError('no port free on both 127.0.0.1 and 127.0.0.2')


def test_delivery_goes_to_the_checked_address(sim, tmp_path, rebinding):
    config = _config(
        tmp_path, sim,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_DENIED_HOSTS=['127.0.0.2'])
    checked, attacker = _same_port_pair()
    with checked, attacker, harness.InProcess(config) as emulator:
        destination = 'http://%s:%d/events' % (REBIND, checked.port)
        _subscribe(emulator.url, destination)
        assert _post(emulator.url, TEST_EVENT, {
            'MessageId': 'ResourceEvent.1.4.2.ResourceChanged'}
        ).status_code == 204
        checked.wait(lambda r: r.posts)
        host = '%s:%d' % (REBIND, checked.port)
        assert checked.posts[0][1]['Host'] == host
        # One POST, and it went to the checked address.
        assert attacker.posts == []
        assert len(rebinding) == 2  # creation and delivery checks only
