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

from sushy_kubevirt.kube import indexer


def vm(name, ns='default', uuid=None, rv='1'):
    return {'metadata': {'name': name, 'namespace': ns,
                         'resourceVersion': rv},
            'uuid': uuid}


def make():
    return indexer.Store({'uuid': lambda o: [o['uuid']] if o['uuid'] else []})


def test_key_and_get():
    s = make()
    s.upsert(vm('a', uuid='u1'))
    assert s.get('default/a')['uuid'] == 'u1'
    assert s.get('other/a') is None
    assert s.keys() == ['default/a']


def test_index_follows_updates_and_deletes():
    s = make()
    s.upsert(vm('a', uuid='u1'))
    s.upsert(vm('b', ns='x', uuid='u1'))
    assert {o['metadata']['name'] for o in s.by_index('uuid', 'u1')} == \
        {'a', 'b'}
    s.upsert(vm('a', uuid='u2'))
    assert [o['metadata']['name'] for o in s.by_index('uuid', 'u1')] == \
        ['b']
    assert [o['metadata']['name'] for o in s.by_index('uuid', 'u2')] == \
        ['a']
    assert s.delete('x/b')['metadata']['name'] == 'b'
    assert s.by_index('uuid', 'u1') == []
    assert s.delete('x/b') is None


def test_replace_reports_changes():
    s = make()
    s.upsert(vm('a'))
    s.upsert(vm('b'))
    added, updated, deleted = s.replace([vm('b', rv='2'), vm('c')])
    assert [o['metadata']['name'] for o in added] == ['c']
    assert [(o['metadata']['resourceVersion'], n['metadata']
             ['resourceVersion']) for o, n in updated] == [('1', '2')]
    assert [o['metadata']['name'] for o in deleted] == ['a']
    assert sorted(s.keys()) == ['default/b', 'default/c']
    assert len(s) == 2


def test_cluster_scoped_key():
    s = indexer.Store()
    s.upsert({'metadata': {'name': 'ns1'}})
    assert s.get('ns1') is not None
