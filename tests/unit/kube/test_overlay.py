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

"""Overlay vs late events when a name is deleted and created again.

As client-go's MutationCache, a written object stays overlaid until the
cache holds that resourceVersion or a newer one, so a late event of the
object it replaced (same name, another uid) does not hide it.
"""

from tests.unit.kube.test_informer import make
from tests.unit.kube.test_informer import vm


def uid(inf, name):
    obj = inf.get('ns', name)
    return obj and obj['metadata']['uid']


def test_late_deleted_of_the_replaced_object_keeps_the_new_one():
    inf = make()
    inf._event('MODIFIED', vm('b', 12, uid='old'))
    inf.note_delete('ns', 'b')
    inf.note_write(vm('b', 20, uid='new'))
    inf._event('DELETED', vm('b', 15, uid='old'))
    assert uid(inf, 'b') == 'new'
    inf._event('ADDED', vm('b', 20, uid='new'))
    assert inf._overlay == {} and uid(inf, 'b') == 'new'


def test_write_survives_older_deleted_without_note_delete():
    inf = make()
    inf._event('MODIFIED', vm('b', 12, uid='old'))
    inf.note_write(vm('b', 20, uid='new'))
    inf._event('DELETED', vm('b', 15, uid='old'))
    assert uid(inf, 'b') == 'new'


def test_delete_survives_late_events_of_the_deleted_object():
    inf = make()
    inf._event('MODIFIED', vm('b', 12, uid='old'))
    inf.note_delete('ns', 'b')
    inf._event('MODIFIED', vm('b', 13, uid='old'))
    assert inf.get('ns', 'b') is None
    inf._event('DELETED', vm('b', 14, uid='old'))
    assert inf._overlay == {} and inf.get('ns', 'b') is None


def test_delete_settled_by_a_newer_object():
    inf = make()
    inf._event('MODIFIED', vm('b', 12, uid='old'))
    inf.note_delete('ns', 'b')
    inf._replace([vm('a', 10), vm('b', 30, uid='other')], '30')
    assert uid(inf, 'b') == 'other'


def test_delete_already_seen_adds_no_overlay():
    inf = make()
    inf._event('DELETED', vm('b', 12))
    inf.note_delete('ns', 'b')
    assert inf._overlay == {}
    inf._event('ADDED', vm('b', 20, uid='new'))
    assert uid(inf, 'b') == 'new'
