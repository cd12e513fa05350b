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

"""Unit tests: ordered copy-on-write indexes, snapshots and stamping."""

from sushy_kubevirt.simulator import index
from sushy_kubevirt.simulator import stamping


def _index(*keys):
    idx = index.Index()
    for key in keys:
        idx.put(key, {'k': key})
    return idx


def test_snapshot_is_ordered_and_never_changes():
    idx = _index(('b', 'x'), ('a', 'y'), ('a', 'x'))
    snap = idx.snapshot(5)
    idx.put(('a', 'a'), {})
    idx.put(('a', 'x'), {'k': 'changed'})
    idx.pop(('b', 'x'))
    assert snap.keys == [('a', 'x'), ('a', 'y'), ('b', 'x')]
    assert snap.objs[('a', 'x')] == {'k': ('a', 'x')}
    assert idx.snapshot(6).keys == [('a', 'a'), ('a', 'x'), ('a', 'y')]


def test_bounds_are_a_namespace_after_a_key():
    snap = _index(('a', '1'), ('a', '2'), ('ab', '1'), ('b', '1'),
                  ('b', '2')).snapshot(1)
    assert snap.bounds() == (0, 5)
    assert snap.bounds('a') == (0, 2)
    assert snap.bounds('b', after=('b', '1')) == (4, 5)
    assert snap.bounds(None, after=('a', '2')) == (2, 5)
    assert snap.bounds('c') == (5, 5)
    assert [o['k'] for o in snap.items('ab')] == [('ab', '1')]


def test_snapshots_evict_compacted_then_least_recently_used():
    held = index.Snapshots(size=2)
    for rv in (1, 2, 3):
        held.keep('t', index.Snapshot(rv, [], {}), compacted_rv=0)
    assert held.get('t', 1) is None and held.get('t', 2) is not None
    held.keep('t', index.Snapshot(4, [], {}), compacted_rv=3)
    assert held.get('t', 2) is None and held.get('t', 3) is not None


def test_stamp_replaces_tokens_in_values_and_keys_and_shares_the_rest():
    shared = {'deep': ['unchanged']}
    obj = {'metadata': {'name': 'vm-1', 'uid': 'U1'},
           'spec': {'root': 'vm-1-root', 'msg': 'PVC vm-1-root of U1',
                    'fields': {'k:{"uid":"U1"}': {}}, 'other': shared}}
    template = stamping.Template(obj, ['vm-1', 'U1'])
    new = template.stamp({'vm-1': 'vm-22', 'U1': 'U2'})
    assert new == {'metadata': {'name': 'vm-22', 'uid': 'U2'},
                   'spec': {'root': 'vm-22-root',
                            'msg': 'PVC vm-22-root of U2',
                            'fields': {'k:{"uid":"U2"}': {}},
                            'other': shared}}
    assert new['spec']['other'] is shared
    assert obj['metadata'] == {'name': 'vm-1', 'uid': 'U1'}
