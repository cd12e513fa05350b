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

"""One index shared by the informers of several namespaces, fed directly."""

from sushy_kubevirt.kube import flatindex
from sushy_kubevirt.kube import indexer
from sushy_kubevirt.kube import indices
from sushy_kubevirt.kube import informer as informer_mod
from sushy_kubevirt.kube import resources

NAMESPACES = ('ns-a', 'ns-b', 'ns-c')


def vm(name, ns, uuid, rv=1):
    return {'metadata': {'name': name, 'namespace': ns,
                         'resourceVersion': str(rv)}, 'uuid': uuid}


class Queue:
    """A dispatcher that drops what it is given."""

    def put(self, handlers, kind, obj):
        pass


def make(namespaces=NAMESPACES):
    """A FlatIndex over one unstarted informer per namespace."""
    informers = {}
    index = flatindex.FlatIndex({'uuid': lambda o: [o['uuid']]},
                                informers.__getitem__)
    for ns in namespaces:
        informers[ns] = informer_mod.Informer(
            None, resources.VM, Queue(), ns, indexers=index.indices)
    return index, informers


def names(found):
    """``{namespace: sorted names}`` of a :meth:`FlatIndex.find` answer."""
    return {inf.namespace: sorted(o['metadata']['name'] for o in objs)
            for inf, objs in found.items()}


def test_a_lookup_finds_the_matches_of_every_namespace():
    index, informers = make()
    informers['ns-a']._replace([vm('a1', 'ns-a', 'u1'),
                                vm('a2', 'ns-a', 'u2')], '1')
    informers['ns-b']._replace([vm('b1', 'ns-b', 'u1')], '1')
    informers['ns-c']._replace([], '1')
    assert names(index.find('uuid', 'u1')) == {'ns-a': ['a1'],
                                               'ns-b': ['b1']}
    assert names(index.find('uuid', 'u2')) == {'ns-a': ['a2']}
    assert index.find('uuid', 'u3') == {}
    # Each store still answers with its own objects only.
    assert [o['metadata']['name'] for o in
            informers['ns-b'].by_index('uuid', 'u1')] == ['b1']


def test_add_update_delete_follow_the_events():
    index, informers = make()
    for inf in informers.values():
        inf._replace([], '1')
    informers['ns-a']._event('ADDED', vm('x', 'ns-a', 'u1', 2))
    informers['ns-c']._event('ADDED', vm('x', 'ns-c', 'u1', 3))
    assert names(index.find('uuid', 'u1')) == {'ns-a': ['x'],
                                               'ns-c': ['x']}
    # A VM moving to another value leaves the old one.
    informers['ns-a']._event('MODIFIED', vm('x', 'ns-a', 'u2', 4))
    assert names(index.find('uuid', 'u1')) == {'ns-c': ['x']}
    assert names(index.find('uuid', 'u2')) == {'ns-a': ['x']}
    informers['ns-c']._event('DELETED', vm('x', 'ns-c', 'u1', 5))
    assert index.find('uuid', 'u1') == {}
    assert index.indices.keys('uuid', 'u1') == []
    assert index.indices.keys('uuid', 'u2') == ['ns-a/x']


def test_a_relist_replaces_only_its_namespace():
    index, informers = make()
    informers['ns-a']._replace([vm('a1', 'ns-a', 'u1'),
                                vm('a2', 'ns-a', 'u2')], '1')
    informers['ns-b']._replace([vm('b1', 'ns-b', 'u1'),
                                vm('b2', 'ns-b', 'u2')], '1')
    # ns-a relists: a1 moved to u3, a2 is gone, a3 is new.
    informers['ns-a']._replace([vm('a1', 'ns-a', 'u3', 2),
                                vm('a3', 'ns-a', 'u2', 2)], '2')
    assert names(index.find('uuid', 'u1')) == {'ns-b': ['b1']}
    assert names(index.find('uuid', 'u2')) == {'ns-a': ['a3'],
                                               'ns-b': ['b2']}
    assert names(index.find('uuid', 'u3')) == {'ns-a': ['a1']}
    # An empty list empties the namespace, not the others.
    informers['ns-b']._replace([], '3')
    assert names(index.find('uuid', 'u2')) == {'ns-a': ['a3']}
    assert index.indices.keys('uuid', 'u1') == []


def test_overlaid_writes_are_found_until_the_watch_catches_up():
    index, informers = make()
    informers['ns-a']._replace([vm('a1', 'ns-a', 'u1')], '1')
    informers['ns-b']._replace([vm('b1', 'ns-b', 'u1')], '1')
    index.note_write(informers['ns-b'], vm('b1', 'ns-b', 'u9', 5))
    assert names(index.find('uuid', 'u1')) == {'ns-a': ['a1']}
    assert names(index.find('uuid', 'u9')) == {'ns-b': ['b1']}
    informers['ns-b']._event('MODIFIED', vm('b1', 'ns-b', 'u9', 5))
    assert not informers['ns-b'].has_overlay()
    assert names(index.find('uuid', 'u9')) == {'ns-b': ['b1']}
    assert index._overlaid == set()


def test_a_lookup_probes_once_however_many_namespaces(monkeypatch):
    probes = []
    keys = indices.Indices.keys
    monkeypatch.setattr(indices.Indices, 'keys', lambda self, *a: (
        probes.append(a), keys(self, *a))[1])
    for count in (1, 100):
        index, informers = make(['ns-%03d' % i for i in range(count)])
        for ns, inf in informers.items():
            inf._replace([vm('vm', ns, ns)], '1')
        probes.clear()
        assert names(index.find('uuid', 'ns-000')) == {'ns-000': ['vm']}
        assert index.find('uuid', 'none') == {}
        assert probes == [('uuid', 'ns-000'), ('uuid', 'none')]


def test_stores_sharing_indices_keep_their_own_objects():
    shared = indices.Indices({'uuid': lambda o: [o['uuid']]})
    a, b = indexer.Store(shared), indexer.Store(shared)
    a.upsert(vm('x', 'ns-a', 'u1'))
    b.upsert(vm('x', 'ns-b', 'u1'))
    assert sorted(shared.keys('uuid', 'u1')) == ['ns-a/x', 'ns-b/x']
    assert [o['metadata']['namespace'] for o in a.by_index('uuid', 'u1')] \
        == ['ns-a']
    assert b.delete('ns-b/x') is not None
    assert shared.keys('uuid', 'u1') == ['ns-a/x']
    assert b.by_index('uuid', 'u1') == []


def test_the_generation_changes_with_every_change_and_not_otherwise():
    index, informers = make()
    informers['ns-a']._replace([vm('a1', 'ns-a', 'u1')], '1')
    seen = index.generation()
    index.find('uuid', 'u1')
    assert index.generation() == seen
    for event in (('MODIFIED', vm('a1', 'ns-a', 'u1', 2)),
                  ('ADDED', vm('b1', 'ns-b', 'u2', 3)),
                  ('DELETED', vm('b1', 'ns-b', 'u2', 4))):
        informers[event[1]['metadata']['namespace']]._event(*event)
        assert index.generation() != seen
        seen = index.generation()
    # None while a write is overlaid: the stores do not say it all.
    index.note_write(informers['ns-a'], vm('a1', 'ns-a', 'u1', 5))
    assert index.generation() is None
    informers['ns-a']._event('MODIFIED', vm('a1', 'ns-a', 'u1', 5))
    assert index.generation() not in (None, seen)
