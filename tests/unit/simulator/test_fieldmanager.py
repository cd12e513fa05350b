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

"""managedFields and server-side apply, in the answers a real
kube-apiserver 1.34 gave to the same steps (tests/differential)."""

import pytest

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import fieldmanager
from sushy_kubevirt.simulator import storage

RT = storage.ResourceType('g', 'v1', 'things', 'Thing')
SECRETS = storage.ResourceType('', 'v1', 'secrets', 'Secret',
                               status_subresource=False, custom=False)


def _obj(spec, **meta):
    return {'apiVersion': 'g/v1', 'kind': 'Thing',
            'metadata': dict(meta, name='t'), 'spec': spec}


def _sets(obj):
    return {e['manager']: e['fieldsV1']
            for e in obj['metadata'].get('managedFields') or ()}


def _apply(current, manager, spec, force=False):
    return fieldmanager.apply(RT, current, _obj(spec), manager, force,
                              now='2026-01-01T00:00:00Z')


def test_create_owns_every_field_with_maps_as_members():
    obj = _obj({'size': 1}, labels={'a': '1'},
               finalizers=['x/y'], ownerReferences=[{'uid': 'u'}])
    fieldmanager.update(RT, obj, None, 'me', now='t')
    assert _sets(obj)['me'] == {
        'f:metadata': {'f:labels': {'.': {}, 'f:a': {}},
                       'f:finalizers': {'.': {}, 'v:"x/y"': {}},
                       'f:ownerReferences': {'.': {}, 'k:{"uid":"u"}': {}}},
        'f:spec': {'.': {}, 'f:size': {}}}


def test_built_in_structs_are_not_members_maps_are():
    lease = {'metadata': {'name': 'l'}, 'spec': {'holderIdentity': 'a'},
             'data': {'k': 'v'}}
    fieldmanager.update(SECRETS, lease, None, 'me', now='t')
    assert _sets(lease)['me'] == {'f:spec': {'f:holderIdentity': {}},
                                  'f:data': {'.': {}, 'f:k': {}}}


def test_update_takes_changed_fields_from_others_removal_takes_none():
    old = _apply(None, 'alice', {'size': 1, 'color': 'red'})
    new = storage.clone(old)
    new['spec']['size'] = 4
    fieldmanager.update(RT, new, old, 'carol', now='t')
    assert _sets(new) == {'alice': {'f:spec': {'.': {}, 'f:color': {}}},
                          'carol': {'f:spec': {'f:size': {}}}}
    gone = storage.clone(new)
    del gone['spec']['color']
    fieldmanager.update(RT, gone, new, 'kcm', now='t')
    assert 'kcm' not in _sets(gone)
    assert _sets(gone)['alice'] == {'f:spec': {}}


def test_apply_conflict_names_the_manager_and_force_takes_over():
    first = _apply(None, 'alice', {'size': 1, 'color': 'red'})
    with pytest.raises(apistatus.ApiError) as exc:
        _apply(first, 'bob', {'size': 2})
    assert exc.value.code == 409
    assert exc.value.message == ('Apply failed with 1 conflict: conflict '
                                 'with "alice": .spec.size')
    assert exc.value.details['causes'] == [{
        'reason': 'FieldManagerConflict', 'message': 'conflict with "alice"',
        'field': '.spec.size'}]
    shared = _apply(first, 'bob', {'size': 1})   # same value: no conflict
    bob = shared['metadata']['managedFields'][0]
    assert bob['manager'] == 'bob' and 'time' not in bob   # no change
    forced = _apply(shared, 'bob', {'size': 3, 'color': 'blue'}, force=True)
    assert forced['spec'] == {'size': 3, 'color': 'blue'}
    assert _sets(forced)['alice'] == {'f:spec': {}}


def test_apply_removes_what_it_no_longer_applies_unless_owned():
    first = _apply(None, 'alice', {'size': 1, 'color': 'red'})
    assert _apply(first, 'alice', {'size': 1})['spec'] == {'size': 1}
    both = _apply(first, 'bob', {'color': 'red'})
    assert _apply(both, 'alice', {'size': 1})['spec'] == {
        'size': 1, 'color': 'red'}


def test_several_conflicts_are_listed_by_manager():
    first = _apply(None, 'alice', {'a': 1, 'b': 1})
    with pytest.raises(apistatus.ApiError) as exc:
        _apply(first, 'bob', {'a': 2, 'b': 2})
    assert exc.value.message == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n'
        '- .spec.a\n- .spec.b')
