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

"""Fault injection, throttling, restart and the request log."""

import json
import threading
import time

from kubernetes import client
import pytest
from tests.functional.simulator import apitools
import urllib3

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)


def _list(custom, **kwargs):
    return custom.list_namespaced_custom_object(G, V, 'default', P, **kwargs)


def test_forced_status_one_shot_matched_on_method_path_query(simulator,
                                                             custom):
    simulator.faults.status(500, method='GET', path='/widgets$',
                            query={'limit': '7'})
    _list(custom)  # query does not match
    with pytest.raises(client.ApiException) as exc:
        _list(custom, limit=7)
    assert exc.value.status == 500
    assert json.loads(exc.value.body)['kind'] == 'Status'
    _list(custom, limit=7)  # one-shot


@pytest.mark.parametrize('code,reason', [
    (403, 'Forbidden'), (404, 'NotFound'), (409, 'Conflict'),
    (410, 'Expired'), (422, 'Invalid'), (504, 'Timeout')])
def test_forced_status_n_times(simulator, custom, code, reason):
    simulator.faults.status(code, times=2, path='widgets')
    for _ in range(2):
        with pytest.raises(client.ApiException) as exc:
            _list(custom)
        assert exc.value.status == code
        assert json.loads(exc.value.body)['reason'] == reason
    _list(custom)


def test_forced_429_is_plain_text_with_retry_after(simulator, custom):
    # A POST: urllib3 itself retries idempotent requests on 429.
    simulator.faults.status(429, retry_after=3, method='POST')
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'a')
    assert exc.value.status == 429
    assert exc.value.body == 'Too many requests, please try again later.\n'
    assert exc.value.headers['Retry-After'] == '3'
    assert 'X-Kubernetes-PF-FlowSchema-UID' in exc.value.headers


def test_error_event_in_stream_after_k_events(simulator, custom):
    for name in 'abc':
        apitools.create(custom, name)
    simulator.faults.watch_error(500, after=2, query={'watch': None})
    events = apitools.read_events(
        apitools.watch_lines(custom, timeout_seconds=3))
    assert [e['type'] for e in events] == ['ADDED', 'ADDED', 'ERROR']
    assert events[-1]['object']['code'] == 500


def test_abrupt_drop_mid_stream(simulator, custom):
    apitools.create(custom, 'a')
    simulator.faults.drop(after=1)
    resp = apitools.watch_lines(custom, timeout_seconds=3)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        apitools.read_events(resp)


def test_reset_after_headers(simulator, custom):
    simulator.faults.drop(after=0, partial=False)
    resp = apitools.watch_lines(custom, timeout_seconds=3)
    assert resp.status == 200
    with pytest.raises(urllib3.exceptions.ProtocolError):
        apitools.read_events(resp)


def test_stalled_watch_hits_client_read_timeout(simulator, custom):
    apitools.create(custom, 'a')
    simulator.faults.stall(seconds=3)
    resp = apitools.watch_lines(custom, timeout=(2, 0.5), timeout_seconds=3)
    with pytest.raises((urllib3.exceptions.ReadTimeoutError,
                        urllib3.exceptions.ProtocolError)):
        apitools.read_events(resp)


def test_very_short_watch_closes_cleanly_with_no_events(simulator, custom):
    apitools.create(custom, 'a')
    simulator.faults.close(after=0)
    started = time.monotonic()
    assert apitools.read_events(
        apitools.watch_lines(custom, timeout_seconds=3)) == []
    assert time.monotonic() - started < 1


def test_latency_per_request(simulator, custom):
    simulator.faults.latency(0.3, path='widgets', times=1)
    started = time.monotonic()
    _list(custom)
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    _list(custom)
    assert time.monotonic() - started < 0.3


def test_restart_reopens_its_port_whatever_clients_do_meanwhile(simulator):
    # Below the ephemeral range: no client's local port, not even a
    # client connected to itself while the server is down (TCP
    # simultaneous open: the CI's "Address already in use" in
    # test_staleness, each reconnect reading its own ClientHello).
    port = int(simulator.url.rpartition(':')[2])
    with open('/proc/sys/net/ipv4/ip_local_port_range') as stream:
        assert port < int(stream.read().split()[0])
    for _ in range(3):
        assert simulator.restart_api(down_seconds=0.2).wait(5)
        assert simulator.url.endswith(':%d' % port)


def test_restart_refuses_connections_then_cuts_watches(simulator, custom):
    apitools.create(custom, 'a')
    resp = apitools.watch_lines(
        custom, resource_version='0', timeout_seconds=5)
    back = simulator.restart_api(down_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        apitools.read_events(resp)  # the watch is cut at once
    assert time.monotonic() - started < 2
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        _list(custom, _request_timeout=1)
    assert back.wait(3)
    assert [o['metadata']['name'] for o in _list(custom)['items']] == ['a']


@pytest.mark.simulator(install=False, max_qps=5)
def test_apf_rate_limit_429(custom):
    codes = []
    for i in range(15):  # POSTs: urllib3 retries GETs on 429 by itself
        try:
            apitools.create(custom, 'w%d' % i)
            codes.append(201)
        except client.ApiException as exc:
            codes.append(exc.status)
            assert exc.headers['Retry-After'] == '1'
            assert exc.body.startswith('Too many requests')
    assert 429 in codes and codes[0] == 201


@pytest.mark.simulator(install=False, max_inflight=1)
def test_apf_concurrency_limit_429(simulator, custom):
    simulator.faults.latency(0.5, path='widgets', times=1)
    slow = threading.Thread(target=_list, args=(custom,))
    slow.start()
    simulator.wait_for(lambda: simulator.faults._inflight or
                       simulator.request_log.count(resource='widgets'))
    time.sleep(0.1)
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'x')
    assert exc.value.status == 429
    slow.join()


def test_compaction_on_demand_expires_watch_rv(simulator, custom):
    rv = apitools.create(custom, 'a')['metadata']['resourceVersion']
    apitools.create(custom, 'b')
    simulator.store.compact()
    events = apitools.read_events(
        apitools.watch_lines(custom, resource_version=rv,
                             timeout_seconds=2))
    assert events[0]['object']['code'] == 410


def test_request_log_and_counters(simulator, custom):
    simulator.request_log.clear()
    apitools.create(custom, 'a')
    _list(custom)
    apitools.read_events(apitools.watch_lines(custom, timeout_seconds=1,
                                              allow_watch_bookmarks=True))
    log = simulator.request_log
    assert log.count(verb='create', resource='widgets', status=201) == 1
    watch = log.entries(verb='watch')[0]
    assert watch['query']['allowWatchBookmarks'] == 'true'
    assert watch['events'] >= 1 and watch['duration'] >= 0.9
    assert watch['user'] == 'admin' and watch['namespace'] == 'default'
    counters = log.counters()
    assert counters[('list', 'widgets')] == 1
    assert counters[('watch', 'widgets')] == 1


def test_client_retries_a_get_on_429_by_itself(simulator, custom):
    """urllib3's default Retry (the client configures none) at work.

    GET, PUT and DELETE answered 429 with Retry-After are retried after
    that many seconds, up to 3 times; POST and PATCH are not (above).
    """
    apitools.create(custom, 'a')
    simulator.request_log.clear()
    simulator.faults.status(429, retry_after=1, method='GET',
                            path='/widgets/a$')
    assert custom.get_namespaced_custom_object(G, V, 'default', P, 'a')
    assert [e['status'] for e in simulator.request_log.entries()] == \
        [429, 200]
