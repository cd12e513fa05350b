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

"""Store rules: RV, no-ops, generation, status split, finalizers, watch."""

import pytest

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import storage

RT = storage.ResourceType('g', 'v1', 'things', 'Thing')
PLAIN = storage.ResourceType('', 'v1', 'configmaps', 'ConfigMap',
                             status_subresource=False)


@pytest.fixture
def s():
    s = storage.Store(start_rv=100, history_size=5)
    s.register(RT)
    s.register(PLAIN)
    return s


def _new(name='a', **extra):
    return dict({'metadata': {'name': name, 'namespace': 'ns'},
                 'spec': {'x': 1}}, **extra)


def test_create_stamps_metadata_and_global_rv(s):
    a = s.create(RT, _new())
    b = s.create(PLAIN, _new('b'))
    assert (a['metadata']['resourceVersion'],
            b['metadata']['resourceVersion']) == ('101', '102')
    assert a['metadata']['generation'] == 1 and a['metadata']['uid']
    assert a['metadata']['managedFields']
    with pytest.raises(apistatus.ApiError) as exc:
        s.create(RT, _new())
    assert exc.value.reason == 'AlreadyExists'


def test_returned_objects_are_copies(s):
    a = s.create(RT, _new())
    a['spec']['x'] = 99
    assert s.get(RT, 'ns', 'a')['spec']['x'] == 1


def test_update_rules(s):
    a = s.create(RT, _new(status={'p': 1}))
    with pytest.raises(apistatus.ApiError) as exc:
        s.update(RT, _new())
    assert exc.value.code == 422
    stale = dict(a, spec={'x': 2})
    s.update(RT, stale)
    with pytest.raises(apistatus.ApiError) as exc:
        s.update(RT, stale)
    assert exc.value.reason == 'Conflict'


def test_noop_does_not_bump(s):
    a = s.create(RT, _new())
    again = s.mutate(RT, 'ns', 'a', lambda o: None)
    assert again['metadata']['resourceVersion'] == \
        a['metadata']['resourceVersion']
    assert s.resource_version == 101


def test_generation_and_status_split(s):
    s.create(RT, _new(status={'p': 1}))
    out = s.mutate(RT, 'ns', 'a', lambda o: o.update(status={'p': 2}))
    assert out['status'] == {'p': 1}  # main resource keeps status
    out = s.mutate(RT, 'ns', 'a', lambda o: o.update(status={'p': 2}),
                   subresource='status')
    assert out['status'] == {'p': 2}
    assert out['metadata']['generation'] == 1
    out = s.mutate(RT, 'ns', 'a', lambda o: o['spec'].update(x=5))
    assert out['metadata']['generation'] == 2


def test_finalizers_delay_deletion(s):
    s.create(RT, _new(metadata={'name': 'a', 'namespace': 'ns',
                                'finalizers': ['f']}))
    w = s.watch(RT, 'ns', str(s.resource_version))
    s.delete(RT, 'ns', 'a')
    assert s.get(RT, 'ns', 'a')['metadata']['deletionTimestamp']
    s.mutate(RT, 'ns', 'a', lambda o: o['metadata'].update(finalizers=[]))
    assert s.try_get(RT, 'ns', 'a') is None
    assert [w.next(0).type for _ in range(2)] == ['MODIFIED', 'DELETED']


def test_watch_replay_expiry_and_rewind(s):
    s.create(RT, _new('a'))
    first = s.resource_version
    for name in 'bcdefg':
        s.create(RT, _new(name))
    expired = s.watch(RT, None, str(first - 1))
    error = expired.next(0)
    assert error['code'] == 410
    assert error['message'] == 'too old resource version: %d (%d)' % (
        first - 1, s.compacted_resource_version)
    replay = s.watch(RT, None, str(s.resource_version - 2))
    assert [replay.next(0).obj['metadata']['name'] for _ in range(2)] == \
        ['f', 'g']
    items, rv = s.snapshot(RT, None, s.resource_version - 3)
    assert [o['metadata']['name'] for o in items] == list('abcd')
    with pytest.raises(apistatus.ApiError) as exc:
        s.snapshot(RT, None, first)
    assert exc.value.code == 410


def test_subscribers_see_commit_order(s):
    seen = []
    s.subscribe(lambda t, rt, obj, old: seen.append(
        (t, obj['metadata']['resourceVersion'])))
    s.create(RT, _new())
    s.delete(RT, 'ns', 'a')
    assert seen == [('ADDED', '101'), ('DELETED', '102')]


def test_slow_watcher_is_closed_over_backlog_limit(s):
    s.watch_backlog_limit = 2
    w = s.watch(RT, None, str(s.resource_version))
    for name in 'abc':
        s.create(RT, _new(name))
    assert w.closed and w.next(0) is None
