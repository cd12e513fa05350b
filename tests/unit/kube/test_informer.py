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

"""Overlay (read-your-writes) and transform rules, fed directly."""

from sushy_kubevirt.kube import informer as informer_mod
from sushy_kubevirt.kube import resources


def vm(name, rv, cores=1, **meta):
    return {'metadata': dict(name=name, namespace='ns',
                             resourceVersion=str(rv), **meta),
            'cores': cores}


class Queue:
    """A dispatcher that only records what it is given."""

    def __init__(self):
        self.items = []

    def put(self, handlers, kind, obj):
        self.items.append((handlers, kind, obj['metadata']['name']))


def make(handlers=()):
    inf = informer_mod.Informer(
        None, resources.VM, Queue(), 'ns',
        indexers={'cores': lambda o: [str(o['cores'])]})
    for fn in handlers:
        inf.add_handler(fn)
    inf._replace([vm('a', 10), vm('b', 11)], '11')
    return inf


def test_transform_strips_managed_fields():
    obj = vm('a', 1, managedFields=[{}], annotations={
        'kubectl.kubernetes.io/last-applied-configuration': '{}', 'k': 'v'})
    out = informer_mod.strip(obj)
    assert 'managedFields' not in out['metadata']
    assert out['metadata']['annotations'] == {'k': 'v'}
    assert 'managedFields' in obj['metadata']
    assert informer_mod.strip(out) == out


def test_write_overlays_until_watch_catches_up():
    inf = make()
    assert inf.has_synced()
    inf.note_write(vm('a', 20, cores=2))
    assert inf.get('ns', 'a')['cores'] == 2
    assert [o['metadata']['name'] for o in inf.by_index('cores', '2')] == \
        ['a']
    assert inf.by_index('cores', '1') == [inf.get('ns', 'b')]
    inf._event('MODIFIED', vm('a', 15, cores=3))     # older: overlay stays
    assert inf.get('ns', 'a')['cores'] == 2
    inf._event('MODIFIED', vm('a', 21, cores=4))     # newer: cache wins
    assert inf.get('ns', 'a')['cores'] == 4
    assert inf._overlay == {}


def test_stale_write_response_is_ignored():
    inf = make()
    inf.note_write(vm('a', 5, cores=9))
    assert inf.get('ns', 'a')['cores'] == 1


def test_delete_overlay_until_deleted_event():
    inf = make()
    inf.note_delete('ns', 'b')
    assert inf.get('ns', 'b') is None
    assert [o['metadata']['name'] for o in inf.list()] == ['a']
    inf._event('DELETED', vm('b', 30))
    inf._event('ADDED', vm('b', 31))
    assert inf.get('ns', 'b')['metadata']['resourceVersion'] == '31'


def test_relist_delivers_tombstones_and_settles_overlay():
    inf = make()
    inf.note_write(vm('c', 40))
    assert inf.get('ns', 'c') is not None
    inf._replace([vm('a', 10)], '50')
    assert inf.get('ns', 'c') is None and inf.get('ns', 'b') is None
    queued = [kind for _, kind, _ in inf._dispatcher.items]
    assert queued.count('DELETED') == 1


def test_handler_added_after_sync_gets_the_store_first():
    early, late = object(), object()
    inf = make([early])
    assert inf._dispatcher.items == [((early,), 'ADDED', 'a'),
                                     ((early,), 'ADDED', 'b')]
    inf._dispatcher.items.clear()
    inf.add_handler(late)
    inf._event('MODIFIED', vm('a', 12, cores=2))
    assert sorted(inf._dispatcher.items[:2]) == [
        ((late,), 'ADDED', 'a'), ((late,), 'ADDED', 'b')]
    assert inf._dispatcher.items[2:] == [((early, late), 'MODIFIED', 'a')]


def test_handler_added_before_sync_gets_the_first_list():
    inf = informer_mod.Informer(None, resources.VM, Queue(), 'ns')
    fn = object()
    inf.add_handler(fn)
    assert inf._dispatcher.items == []
    inf._replace([vm('a', 10)], '10')
    assert inf._dispatcher.items == [((fn,), 'ADDED', 'a')]
