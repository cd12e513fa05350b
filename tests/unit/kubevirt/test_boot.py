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

import json

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import media

ROOT_PVC = {'name': 'root', 'persistentVolumeClaim': {'claimName': 'r'}}


def _vm(disks, nics=(), **kw):
    return fx.vm(disks=disks, interfaces=nics, **kw)


def _check_invariants(before, after, target):
    old, new = fx.orders(before), fx.orders(after)
    assert set(old) == set(new), 'no device lost or added'
    values = [v for v in new.values() if v is not None]
    assert len(values) == len(set(values)), 'bootOrders unique'
    assert all(v > 0 for v in values)
    for key, value in old.items():
        if value is not None:
            assert new[key] is not None, '%s lost its bootOrder' % key
    assert boot.boot_device(after) == (
        'Pxe' if target == 'UefiHttp' else target)


STD = _vm([fx.disk('root', 1), fx.disk('cd', 2, kind='cdrom')],
          [fx.nic('prov', 3)])


@pytest.mark.parametrize('vm, expected', [
    (_vm([fx.disk('root')], [fx.nic('prov')]), None),
    (STD, 'Hdd'),
    (_vm([fx.disk('root', 2), fx.disk('cd', 1, kind='cdrom')]), 'Cd'),
    (_vm([fx.disk('root', 5), fx.disk('lun', 4, kind='lun')]), 'Hdd'),
    (_vm([fx.disk('root', 2)], [fx.nic('prov', 1)]), 'Pxe'),
    (fx.vm(), None),
])
def test_boot_device(vm, expected):
    assert boot.boot_device(vm) == expected


@pytest.mark.parametrize('name, vm, target, expected', [
    ('pxe first', STD, 'Pxe',
     {'disks/root': 2, 'disks/cd': 3, 'interfaces/prov': 1}),
    ('uefihttp is pxe', STD, 'UefiHttp',
     {'disks/root': 2, 'disks/cd': 3, 'interfaces/prov': 1}),
    ('cd first', STD, 'Cd',
     {'disks/root': 2, 'disks/cd': 1, 'interfaces/prov': 3}),
    ('PVC-backed root keeps its bootOrder',
     _vm([fx.disk('root', 1), fx.disk('cd', None, kind='cdrom')],
         [fx.nic('prov', 2)], volumes=[ROOT_PVC]), 'Cd',
     {'disks/root': 2, 'disks/cd': 1, 'interfaces/prov': 3}),
    ('disk without bootOrder becomes a target',
     _vm([fx.disk('root'), fx.disk('cd', 1, kind='cdrom')],
         [fx.nic('prov', 2)]), 'Hdd',
     {'disks/root': 1, 'disks/cd': 2, 'interfaces/prov': 3}),
    ('non-target without bootOrder stays without',
     _vm([fx.disk('root', 1), fx.disk('data')], [fx.nic('prov', 2)]),
     'Pxe', {'disks/root': 2, 'disks/data': None, 'interfaces/prov': 1}),
    ('no bootOrder at all: root stays bootable after the target',
     _vm([fx.disk('root'), fx.disk('cd', kind='cdrom')],
         [fx.nic('prov')]), 'Pxe',
     {'disks/root': 2, 'disks/cd': None, 'interfaces/prov': 1}),
    ('duplicates are repaired',
     _vm([fx.disk('root', 1), fx.disk('data', 1)], [fx.nic('prov', 2)]),
     'Hdd', {'disks/root': 1, 'disks/data': 2, 'interfaces/prov': 3}),
    ('all interfaces become targets, ordered ones first',
     _vm([fx.disk('root', 1)], [fx.nic('a'), fx.nic('b', 3)]), 'Pxe',
     {'disks/root': 3, 'interfaces/a': 2, 'interfaces/b': 1}),
    ('lun counts as Hdd',
     _vm([fx.disk('lun', None, kind='lun')], [fx.nic('prov', 1)]), 'Hdd',
     {'disks/lun': 1, 'interfaces/prov': 2}),
    ('target order keeps previous relative order',
     _vm([fx.disk('a', 4), fx.disk('b', 2)], [fx.nic('n', 1)]), 'Hdd',
     {'disks/a': 2, 'disks/b': 1, 'interfaces/n': 3}),
])
def test_boot_device_ops(name, vm, target, expected):
    ops = boot.boot_device_ops(vm, target)
    after = jsonpatch.apply(vm, ops)
    assert fx.orders(after) == expected
    _check_invariants(vm, after, target)
    assert boot.boot_device_ops(after, target) == []


@pytest.mark.parametrize('vm, target', [
    (STD, 'Hdd'),
    (_vm([fx.disk('root', 5)], [fx.nic('n', 9)]), 'Hdd'),
])
def test_boot_device_ops_noop(vm, target):
    assert boot.boot_device_ops(vm, target) == []


def test_ops_use_device_paths():
    ops = boot.boot_device_ops(STD, 'Pxe')
    assert {op['path'] for op in ops} == {
        '/spec/template/spec/domain/devices/disks/0/bootOrder',
        '/spec/template/spec/domain/devices/disks/1/bootOrder',
        '/spec/template/spec/domain/devices/interfaces/0/bootOrder'}
    assert all(op['op'] == 'replace' for op in ops)


@pytest.mark.parametrize('vm, target, error', [
    (_vm([fx.disk('cd', 1, kind='cdrom')]), 'Hdd', boot.NoSuchDevice),
    (_vm([fx.disk('root', 1)]), 'Pxe', boot.NoSuchDevice),
    (_vm([fx.disk('root', 1)]), 'UefiHttp', boot.NoSuchDevice),
    (STD, 'Floppy', boot.UnsupportedTarget),
    (STD, 'Usb', boot.UnsupportedTarget),
    (STD, None, boot.UnsupportedTarget),
    (STD, 'hdd', boot.UnsupportedTarget),
])
def test_boot_device_errors(vm, target, error):
    with pytest.raises(error) as exc:
        boot.boot_device_ops(vm, target)
    assert exc.value.status == 400
    with pytest.raises(error):
        boot.boot_once_ops(vm, target, None)
    with pytest.raises(error):
        boot.continuous_ops(vm, target)


# --- Boot once ---

ONCE_PATH = '/metadata/annotations/sushy-kubevirt.io~1boot-once'
DISABLED_OP = {'op': 'add', 'value': 'Disabled', 'path': (
    '/metadata/annotations/sushy-kubevirt.io~1boot-override-disabled')}


def _once(vm, target, uid='vmi-1'):
    return jsonpatch.apply(vm, boot.boot_once_ops(vm, target, uid))


def test_once_sets_order_and_annotation():
    ops = boot.boot_once_ops(STD, 'Cd', 'vmi-1')
    assert ops[-1]['path'] == '/metadata/annotations'
    after = jsonpatch.apply(STD, ops)
    assert boot.override_enabled(STD) == 'Continuous'
    assert boot.override_enabled(after) == 'Once'
    assert boot.boot_device(after) == 'Cd'
    _check_invariants(STD, after, 'Cd')
    saved = json.loads(after['metadata']['annotations'][boot.ONCE_ANNOTATION])
    assert saved == {'target': 'Cd', 'vmi': 'vmi-1',
                     'orders': fx.orders(STD)}


def test_once_escapes_annotation_key_in_existing_annotations():
    vm = _vm([fx.disk('root', 1)], [fx.nic('n', 2)],
             annotations={'other': 'x'})
    ops = boot.boot_once_ops(vm, 'Pxe', None)
    assert ops[-1]['op'] == 'add' and ops[-1]['path'] == ONCE_PATH
    after = jsonpatch.apply(vm, ops)
    assert after['metadata']['annotations']['other'] == 'x'
    assert json.loads(after['metadata']['annotations'][
        boot.ONCE_ANNOTATION])['vmi'] == ''


@pytest.mark.parametrize('vmi, restores', [
    (None, False),
    (fx.vmi(uid='vmi-1'), False),
    (fx.vmi(uid='vmi-2'), True),
    (fx.vmi('Pending', uid='vmi-2'), True),
])
def test_restore_after_new_vmi_uid(vmi, restores):
    once = _once(STD, 'Pxe')
    ops = boot.restore_once_ops(once, vmi)
    assert boot.once_consumed(once, vmi) is restores
    if not restores:
        assert ops == []
        return
    assert ops[-2:] == [{'op': 'remove', 'path': ONCE_PATH}, DISABLED_OP]
    after = jsonpatch.apply(once, ops)
    assert fx.orders(after) == fx.orders(STD)
    assert boot.override_enabled(after) == 'Disabled'
    assert boot.restore_once_ops(after, vmi) == []


def test_restore_when_vm_was_off_at_once_time():
    once = _once(STD, 'Cd', uid=None)
    assert boot.restore_once_ops(once, None) == []
    after = jsonpatch.apply(once, boot.restore_once_ops(
        once, fx.vmi(uid='first')))
    assert fx.orders(after) == fx.orders(STD)


def test_restore_original_without_orders():
    vm = _vm([fx.disk('root'), fx.disk('cd', kind='cdrom')],
             [fx.nic('n')])
    once = _once(vm, 'Cd')
    assert fx.orders(once)['disks/cd'] == 1
    after = jsonpatch.apply(
        once, boot.restore_once_ops(once, fx.vmi(uid='vmi-2')))
    assert fx.orders(after) == fx.orders(vm)


def test_restore_with_device_added_meanwhile():
    once = _once(STD, 'Pxe')
    dev = once['spec']['template']['spec']['domain']['devices']
    dev['disks'].append(fx.disk('cd2', 2, kind='cdrom'))
    after = jsonpatch.apply(
        once, boot.restore_once_ops(once, fx.vmi(uid='vmi-2')))
    assert fx.orders(after) == {'disks/root': 1, 'disks/cd': 2,
                                'disks/cd2': 3, 'interfaces/prov': 4}


def test_once_twice_keeps_the_original():
    twice = _once(_once(STD, 'Cd'), 'Pxe')
    assert boot.boot_device(twice) == 'Pxe'
    saved = json.loads(
        twice['metadata']['annotations'][boot.ONCE_ANNOTATION])
    assert saved['orders'] == fx.orders(STD)
    after = jsonpatch.apply(
        twice, boot.restore_once_ops(twice, fx.vmi(uid='vmi-9')))
    assert fx.orders(after) == fx.orders(STD)


@pytest.mark.parametrize('target', ['Hdd', 'Pxe', 'Cd'])
def test_continuous_clears_pending_once(target):
    once = _once(STD, 'Cd')
    after = jsonpatch.apply(once, boot.continuous_ops(once, target))
    assert boot.override_enabled(after) == 'Continuous'
    expected = jsonpatch.apply(STD, boot.boot_device_ops(STD, target))
    assert fx.orders(after) == fx.orders(expected)
    _check_invariants(STD, after, target)


def test_continuous_without_once_equals_boot_device_ops():
    assert boot.continuous_ops(STD, 'Pxe') == boot.boot_device_ops(
        STD, 'Pxe')
    assert boot.continuous_ops(STD, 'Hdd') == []


def test_once_state_survives_serialization():
    """The annotation is the only state: a re-read VM still knows it."""
    once = json.loads(json.dumps(_once(STD, 'Cd')))
    assert boot.override_enabled(once) == 'Once'
    assert boot.restore_once_ops(once, fx.vmi(uid='vmi-1')) == []
    assert boot.restore_once_ops(once, fx.vmi(uid='vmi-2'))


def test_malformed_annotation_is_cleared_on_restore():
    vm = _vm([fx.disk('root', 1)], annotations={
        boot.ONCE_ANNOTATION: 'not json'})
    assert boot.override_enabled(vm) == 'Once'
    ops = boot.restore_once_ops(vm, fx.vmi(uid='x'))
    assert ops == [{'op': 'remove', 'path': ONCE_PATH}, DISABLED_OP]


@pytest.mark.parametrize('uid', ['vmi-1', None])
def test_cancel_restores_a_pending_once_unused(uid):
    once = _once(STD, 'Pxe', uid=uid)
    assert not boot.once_consumed(once, fx.vmi(uid=uid) if uid else None)
    ops = boot.cancel_once_ops(once)
    assert ops[-2:] == [{'op': 'remove', 'path': ONCE_PATH}, DISABLED_OP]
    after = jsonpatch.apply(once, ops)
    assert fx.orders(after) == fx.orders(STD)
    assert boot.override_enabled(after) == 'Disabled'
    assert boot.cancel_once_ops(after) == []


@pytest.mark.parametrize('target', ['Hdd', 'Pxe'])
def test_disabled_keeps_the_order_until_the_next_override(target):
    disabled = jsonpatch.apply(STD, boot.cancel_once_ops(STD))
    assert disabled['spec'] == STD['spec']
    assert boot.override_enabled(disabled) == 'Disabled'
    assert boot.boot_device(disabled) == boot.boot_device(STD)
    for ops in (boot.continuous_ops(disabled, target),
                boot.boot_once_ops(disabled, target, 'u1')):
        after = jsonpatch.apply(disabled, ops)
        assert boot.override_enabled(after) != 'Disabled'
        assert boot.boot_device(after) == target


def test_cd_with_no_cdrom_is_kept_and_falls_through():
    vm = _vm([fx.disk('root', 1)], [fx.nic('n', 2)])
    assert boot.boot_device_ops(vm, 'Cd') == []
    kept = jsonpatch.apply(vm, boot.continuous_ops(vm, 'Cd'))
    assert boot.boot_device(kept) == 'Cd'
    assert kept['spec'] == vm['spec']
    once = jsonpatch.apply(kept, boot.boot_once_ops(kept, 'Pxe', 'u1'))
    assert boot.boot_device(once) == 'Pxe'
    restored = jsonpatch.apply(once, boot.cancel_once_ops(once))
    assert boot.boot_device(restored) == 'Cd'
    back = jsonpatch.apply(kept, boot.continuous_ops(kept, 'Hdd'))
    assert boot.boot_device(back) == 'Hdd'
    assert boot.CD_ANNOTATION not in back['metadata'].get('annotations', {})


def test_a_cdrom_attached_for_a_kept_cd_boots_first():
    vm = _vm([fx.disk('root', 1)], [fx.nic('n', 2)])
    for ops in (boot.continuous_ops(vm, 'Cd'),
                boot.boot_once_ops(vm, 'Cd', 'u1')):
        kept = jsonpatch.apply(vm, ops)
        attached = jsonpatch.apply(kept, media.attach_ops(kept, 'Cd', 'dv'))
        assert boot.boot_device(attached) == 'Hdd'   # added last
        final = jsonpatch.apply(attached,
                                boot.cd_attached_ops(kept, attached))
        assert boot.boot_device(final) == 'Cd'
        assert boot.override_enabled(final) == boot.override_enabled(kept)
        assert boot.CD_ANNOTATION not in final['metadata'].get(
            'annotations', {})
    plain = jsonpatch.apply(vm, media.attach_ops(vm, 'Cd', 'dv'))
    assert boot.cd_attached_ops(vm, plain) == []
