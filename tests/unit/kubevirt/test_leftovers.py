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

"""Unit tests for sushy_kubevirt.kubevirt.leftovers (pure functions)."""

import pytest
from tests.unit.kubevirt.test_media import attached
from tests.unit.kubevirt.test_media import make_dv
from tests.unit.kubevirt.test_media import make_vm

from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import leftovers
from sushy_kubevirt.kubevirt import media


def test_an_unused_tray_is_an_orphan():
    vm = make_vm()
    dv = make_dv(vm)
    assert leftovers.orphan(dv, vm)
    assert not leftovers.orphan(dv, attached(vm))


@pytest.mark.parametrize('change', [
    'inserted false', 'deleting', 'other owner uid', 'no label',
    'other vm'])
def test_what_is_not_an_orphan(change):
    vm = make_vm()
    dv = make_dv(vm)
    meta = dv['metadata']
    if change == 'inserted false':
        meta['annotations'][media.ANNOTATION_INSERTED] = 'false'
    elif change == 'deleting':
        meta['deletionTimestamp'] = '2024-01-01T00:00:00Z'
    elif change == 'other owner uid':
        meta['ownerReferences'][0]['uid'] = 'u-2'
    elif change == 'no label':
        del meta['labels'][media.LABEL_MANAGED_BY]
    else:
        vm = make_vm('node-1')
    assert not leftovers.orphan(dv, vm)


def test_a_detached_tray_of_a_former_generation_is_an_orphan():
    vm = make_vm()
    detached = media.datavolume_body(vm, 'Cd', 'http://h/i.iso',
                                     inserted=False, generation_=1)
    recorded = jsonpatch.apply(vm, generations.record_ops(vm, 'Cd', detached))
    assert not leftovers.orphan(detached, recorded)
    # A later insert made generation 2 and could not delete this one.
    newer = media.datavolume_body(vm, 'Cd', 'http://h/j.iso',
                                  generation_=2)
    later = jsonpatch.apply(recorded, generations.record_ops(
        recorded, 'Cd', newer))
    assert leftovers.orphan(detached, later)


def _secret(vm, token='t1'):
    return media.secret_body(vm, 'Cd', media.datavolume_name(vm, 'Cd'),
                             'u', 'p', token)


def test_a_secret_no_datavolume_uses_is_an_orphan():
    vm = make_vm()
    secret = _secret(vm)
    assert leftovers.orphan_secret(secret, vm, None)
    other = make_dv(vm)     # a DataVolume made without credentials
    assert leftovers.orphan_secret(secret, vm, other)


@pytest.mark.parametrize('change', [
    'its datavolume', 'attached', 'deleting', 'other owner uid',
    'no label', 'other vm', 'not a tray name'])
def test_what_is_not_an_orphan_secret(change):
    vm = make_vm()
    secret = _secret(vm)
    meta, dv = secret['metadata'], None
    if change == 'its datavolume':
        dv = media.datavolume_body(vm, 'Cd', 'http://h/i.iso',
                                   secret=meta['name'])
    elif change == 'attached':
        vm = attached(vm)
    elif change == 'deleting':
        meta['deletionTimestamp'] = '2024-01-01T00:00:00Z'
    elif change == 'other owner uid':
        meta['ownerReferences'][0]['uid'] = 'u-2'
    elif change == 'no label':
        del meta['labels'][media.LABEL_MANAGED_BY]
    elif change == 'other vm':
        vm = make_vm('node-1')
    else:
        meta['name'] = 'node-0-vmedia-cd-credentials'
    assert not leftovers.orphan_secret(secret, vm, dv)


def test_the_fence_is_set_once_and_lifted_by_an_attach():
    vm = make_vm()
    fenced = jsonpatch.apply(vm, leftovers.collect_ops(vm, 't1'))
    assert leftovers.collecting(fenced) == 't1'
    assert leftovers.collect_ops(fenced, 't1') == []
    assert leftovers.collecting(jsonpatch.apply(
        fenced, leftovers.release_ops(fenced))) is None
    assert leftovers.release_ops(vm) == []


def test_the_fence_names_the_insert_or_else_the_uid():
    vm = make_vm()
    dv = media.datavolume_body(vm, 'Cd', 'http://h/i.iso', token='t1')
    dv['metadata']['uid'] = 'dv-uid'
    legacy = make_dv(vm)
    legacy['metadata']['uid'] = 'old-uid'
    assert leftovers.fence_key(dv) == 't1'
    assert leftovers.fence_key(legacy) == 'old-uid'
    for key, fenced in (('t1', dv), ('dv-uid', dv), ('old-uid', legacy)):
        assert leftovers.fenced(jsonpatch.apply(
            vm, leftovers.collect_ops(vm, key)), fenced)
    assert not leftovers.fenced(jsonpatch.apply(
        vm, leftovers.collect_ops(vm, 't2')), dv)
    assert not leftovers.fenced(vm, dv)
    assert not leftovers.fenced(vm, None)
