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

"""Watch semantics over HTTP with the official client."""

import json
import threading
import time

from kubernetes import client
from kubernetes import config
from kubernetes import watch
import pytest
from tests.functional.simulator import apitools

from sushy_kubevirt.simulator import CONFIGMAPS

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)


def _types(events):
    return [e['type'] for e in events]


def test_chunked_ndjson_headers_flushed_before_events(simulator):
    with apitools.connect(simulator, 2) as s:
        s.sendall(b'GET /apis/sim.example.com/v1/widgets?watch=1&'
                  b'timeoutSeconds=1 HTTP/1.1\r\nHost: x\r\n'
                  b'Authorization: Bearer %s\r\n\r\n'
                  % simulator.token.encode())
        head = s.recv(4096)
        # Headers arrive at once although no event exists yet.
        assert head.startswith(b'HTTP/1.1 200')
        assert b'Transfer-Encoding: chunked' in head
        assert b'Content-Type: application/json' in head
        rest = b''
        while not rest.endswith(b'0\r\n\r\n'):
            data = s.recv(4096)
            assert data, 'stream must end with the zero-length chunk'
            rest += data


def test_watch_unset_rv_sends_synthetic_added_then_live(custom, simulator):
    apitools.create(custom, 'a')
    apitools.create(custom, 'b')
    resp = apitools.watch_lines(custom, timeout_seconds=1)
    apitools.create(custom, 'c')
    events = apitools.read_events(resp)
    names = [(e['type'], e['object']['metadata']['name'])
             for e in events if e['type'] != 'BOOKMARK']
    assert names == [('ADDED', 'a'), ('ADDED', 'b'), ('ADDED', 'c')]


def test_watch_from_rv_replays_history_in_order(custom, simulator):
    rv = apitools.create(custom, 'a')['metadata']['resourceVersion']
    custom.patch_namespaced_custom_object(G, V, 'default', P, 'a',
                                          {'spec': {'size': 2}})
    apitools.create(custom, 'b')
    custom.delete_namespaced_custom_object(G, V, 'default', P, 'a')
    events = apitools.read_events(
        apitools.watch_lines(custom, resource_version=rv,
                             timeout_seconds=1))
    assert _types(events) == ['MODIFIED', 'ADDED', 'DELETED']
    rvs = [int(e['object']['metadata']['resourceVersion']) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)
    # DELETED carries the deletion's resourceVersion.
    assert rvs[-1] == simulator.store.resource_version


def test_watch_from_compacted_rv_is_200_then_410_error(custom, simulator):
    rv = apitools.create(custom, 'a')['metadata']['resourceVersion']
    apitools.create(custom, 'b')
    simulator.store.compact()
    resp = apitools.watch_lines(custom, resource_version=rv, timeout_seconds=5)
    assert resp.status == 200
    started = time.monotonic()
    events = apitools.read_events(resp)
    assert time.monotonic() - started < 2  # the stream ends at once
    assert len(events) == 1 and events[0]['type'] == 'ERROR'
    status = events[0]['object']
    assert status['code'] == 410 and status['reason'] == 'Expired'
    assert status['message'] == 'too old resource version: %s (%d)' % (
        rv, simulator.store.compacted_resource_version)


def test_python_watch_raises_410_after_its_retry(custom, simulator):
    rv = apitools.create(custom, 'a')['metadata']['resourceVersion']
    apitools.create(custom, 'b')
    simulator.store.compact()
    with pytest.raises(client.ApiException) as exc:
        for _ in watch.Watch().stream(
                custom.list_namespaced_custom_object, G, V, 'default', P,
                resource_version=rv):
            pass
    assert exc.value.status == 410


def test_watch_from_future_rv_is_504_error(custom, simulator):
    future = str(simulator.store.resource_version + 50)
    events = apitools.read_events(
        apitools.watch_lines(custom, resource_version=future,
                             timeout_seconds=5))
    assert _types(events) == ['ERROR']
    assert events[0]['object']['code'] == 504
    assert events[0]['object']['details']['causes'][0]['reason'] == \
        'ResourceVersionTooLarge'


def test_selector_transitions_are_added_and_deleted(custom, simulator):
    rv = apitools.create(custom, 'a', labels={'x': 'no'})['metadata'][
        'resourceVersion']
    custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'a', {'metadata': {'labels': {'x': 'yes'}}})
    custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'a', {'spec': {'size': 3}})
    out = custom.patch_namespaced_custom_object(
        G, V, 'default', P, 'a', {'metadata': {'labels': {'x': 'no'}}})
    events = apitools.read_events(apitools.watch_lines(
        custom, resource_version=rv, label_selector='x=yes',
        timeout_seconds=1))
    assert _types(events) == ['ADDED', 'MODIFIED', 'DELETED']
    deleted = events[-1]['object']
    # Previous content (still matching) with the event's resourceVersion.
    assert deleted['metadata']['labels'] == {'x': 'yes'}
    assert deleted['metadata']['resourceVersion'] == \
        out['metadata']['resourceVersion']


def test_field_selector_watch(custom):
    rv = apitools.create(custom, 'a')['metadata']['resourceVersion']
    apitools.create(custom, 'b')
    events = apitools.read_events(apitools.watch_lines(
        custom, resource_version=rv, field_selector='metadata.name=b',
        timeout_seconds=1))
    assert [e['object']['metadata']['name'] for e in events] == ['b']


def test_bookmarks_only_when_allowed(custom, simulator):
    rv = apitools.create(custom, 'a')['metadata']['resourceVersion']
    plain = apitools.read_events(
        apitools.watch_lines(custom, resource_version=rv,
                             timeout_seconds=1))
    assert plain == []
    # Another resource's write moves the global RV past this CRD's last,
    # but the widgets' watch cache has not seen it: no bookmark (it would
    # repeat the RV the watch started from), as kube-apiserver.
    simulator.store.create(CONFIGMAPS, {
        'metadata': {'name': 'c', 'namespace': 'default'}})
    assert apitools.read_events(apitools.watch_lines(
        custom, resource_version=rv, allow_watch_bookmarks=True,
        timeout_seconds=1)) == []
    # A consistent list of widgets catches their cache up: bookmarks.
    custom.list_namespaced_custom_object(G, V, 'default', P)
    events = apitools.read_events(apitools.watch_lines(
        custom, resource_version=rv, allow_watch_bookmarks=True,
        timeout_seconds=1))
    assert len(events) >= 3  # every 0.2 s
    assert set(_types(events)) == {'BOOKMARK'}
    bookmark = events[0]['object']
    assert bookmark['kind'] == 'Widget'
    assert bookmark['apiVersion'] == 'sim.example.com/v1'
    assert set(bookmark) == {'kind', 'apiVersion', 'metadata'}
    assert bookmark['metadata'] == {
        'resourceVersion': str(simulator.store.resource_version)}


def test_timeout_seconds_is_honoured(custom):
    started = time.monotonic()
    apitools.read_events(apitools.watch_lines(custom, timeout_seconds=1))
    assert 0.9 <= time.monotonic() - started < 1.8


def test_default_timeout_is_randomised_from_min_request_timeout(custom):
    durations = []
    for _ in range(2):
        started = time.monotonic()
        apitools.read_events(
            apitools.watch_lines(custom, resource_version='0'))
        durations.append(time.monotonic() - started)
    # min_request_timeout is 1 s: each watch lasts between 1 and 2 s.
    assert all(0.9 <= d < 2.5 for d in durations)


def test_streaming_list_ends_initial_events_with_bookmark(kube_client,
                                                          custom, simulator):
    apitools.create(custom, 'a')
    apitools.create(custom, 'b')
    code, _headers, data = apitools.raw(
        kube_client, 'GET', '/apis/sim.example.com/v1/widgets',
        query={'watch': 'true', 'sendInitialEvents': 'true',
               'resourceVersionMatch': 'NotOlderThan',
               'allowWatchBookmarks': 'true', 'timeoutSeconds': '1'})
    assert code == 200
    events = [json.loads(line) for line in data.splitlines() if line]
    assert _types(events)[:3] == ['ADDED', 'ADDED', 'BOOKMARK']
    end = events[2]['object']['metadata']
    assert end['annotations'] == {'k8s.io/initial-events-end': 'true'}
    assert end['resourceVersion'] == str(simulator.store.resource_version)


def test_streaming_list_needs_not_older_than(kube_client):
    code, _headers, data = apitools.raw(
        kube_client, 'GET', '/apis/sim.example.com/v1/widgets',
        query={'watch': 'true', 'sendInitialEvents': 'true'})
    assert code == 422
    assert 'sendInitialEvents requires setting resourceVersionMatch to ' \
        'NotOlderThan' in json.loads(data)['message']


@pytest.mark.simulator(install=False, watchlist_enabled=False)
def test_streaming_list_rejected_when_gate_off(kube_client):
    code, _headers, data = apitools.raw(
        kube_client, 'GET', '/apis/sim.example.com/v1/widgets',
        query={'watch': 'true', 'sendInitialEvents': 'true',
               'resourceVersionMatch': 'NotOlderThan'})
    assert code == 422
    assert 'sendInitialEvents is forbidden for watch unless the WatchList ' \
        'feature gate is enabled' in json.loads(data)['message']


def test_fifty_concurrent_watchers_see_every_event(custom, simulator,
                                                   kubeconfig):
    rv = str(simulator.store.resource_version)
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig,
                            client_configuration=configuration)
    configuration.connection_pool_maxsize = 60
    watchers = client.CustomObjectsApi(client.ApiClient(configuration))
    results = [None] * 50

    def consume(i):
        resp = apitools.watch_lines(watchers, resource_version=rv, timeout=10,
                                    timeout_seconds=5)
        results[i] = apitools.read_events(resp, limit=20)
    threads = [threading.Thread(target=consume, args=(i,))
               for i in range(50)]
    for t in threads:
        t.start()
    simulator.wait_for(lambda: len(simulator.store._watchers) >= 50)
    for i in range(20):
        apitools.create(custom, 'w%02d' % i)
    for t in threads:
        t.join(10)
    expected = ['w%02d' % i for i in range(20)]
    for events in results:
        assert [e['object']['metadata']['name'] for e in events] == expected
    watchers.api_client.close()
