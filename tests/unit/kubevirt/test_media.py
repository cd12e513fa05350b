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

"""Unit tests for sushy_kubevirt.kubevirt.media (pure functions)."""

import copy

import pytest

from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import imports
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import tray

URL = 'http://10.0.0.1:8080/images/ipa%20boot.iso'


def make_vm(name='node-0', boot_order=True, root_dv='node-0-root'):
    disk = {'name': 'root', 'disk': {'bus': 'virtio'}}
    iface = {'name': 'default', 'bridge': {}}
    if boot_order:
        disk['bootOrder'] = 1
        iface['bootOrder'] = 2
    return {
        'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
        'metadata': {'name': name, 'namespace': 'lab', 'uid': 'u-1',
                     'resourceVersion': '7'},
        'spec': {
            'runStrategy': 'Halted',
            'dataVolumeTemplates': [{'metadata': {'name': root_dv}}],
            'template': {'spec': {
                'domain': {'devices': {'disks': [disk],
                                       'interfaces': [iface]}},
                'volumes': [{'name': 'root',
                             'dataVolume': {'name': root_dv}}]}}}}


def make_dv(vm, phase=None, progress=None, conditions=None, url=URL):
    dv = media.datavolume_body(vm, 'Cd', url)
    dv['status'] = {}
    if phase:
        dv['status']['phase'] = phase
    if progress:
        dv['status']['progress'] = progress
    if conditions:
        dv['status']['conditions'] = conditions
    return dv


def attached(vm, dv_name=None):
    dv_name = dv_name or media.datavolume_name(vm, 'Cd')
    return jsonpatch.apply(vm, media.attach_ops(vm, 'Cd', dv_name))


def boot_orders(vm):
    spec = vm['spec']['template']['spec']
    return [d.get('bootOrder') for d in spec['domain']['devices']['disks']
            + spec['domain']['devices']['interfaces']]


class TestNames:

    def test_short_name(self):
        assert media.datavolume_name(make_vm(), 'Cd') == 'node-0-vmedia-cd'

    def test_deterministic(self):
        assert (media.datavolume_name(make_vm('a' * 200), 'Cd')
                == media.datavolume_name(make_vm('a' * 200), 'Cd'))

    def test_long_name_hashed_and_fits(self):
        long_a = media.datavolume_name(make_vm('a' * 60 + '-x'), 'Cd')
        long_b = media.datavolume_name(make_vm('a' * 60 + '-y'), 'Cd')
        assert len(long_a) <= 63 and len(long_b) <= 63
        assert long_a != long_b
        assert long_a.endswith(long_a[-10:]) and '-vmedia-cd-' in long_a
        assert long_a[0].isalnum() and long_a[-1].isalnum()

    def test_devices_differ(self):
        vm = make_vm()
        assert (media.datavolume_name(vm, 'Cd')
                != media.datavolume_name(vm, 'Floppy'))

    def test_never_a_root_disk_name(self):
        vm = make_vm(root_dv='node-0-vmedia-cd')
        name = media.datavolume_name(vm, 'Cd')
        assert name != 'node-0-vmedia-cd'
        assert name.startswith('node-0-vmedia-cd-') and len(name) <= 63

    def test_secret_name(self):
        assert media.secret_name('x-vmedia-cd') == 'x-vmedia-cd-auth'

    def test_generations_name_new_datavolumes(self):
        vm = make_vm()
        assert generations.generation(vm, 'Cd') == 0
        assert media.datavolume_name(vm, 'Cd', 0) == 'node-0-vmedia-cd'
        assert media.datavolume_name(vm, 'Cd', 3) == 'node-0-vmedia-cd-3'
        dv = media.datavolume_body(vm, 'Cd', URL, generation_=3)
        assert dv['metadata']['name'] == 'node-0-vmedia-cd-3'
        assert generations.of_datavolume(dv) == 3
        recorded = jsonpatch.apply(vm, generations.record_ops(vm, 'Cd', dv))
        assert recorded['metadata']['annotations'] == {
            'sushy-kubevirt.io/vmedia-cd-generation': '3'}
        assert generations.generation(recorded, 'Cd') == 3
        assert generations.record_ops(recorded, 'Cd', dv) == []
        # The VM's latest generation names the tray when nothing is
        # attached; the attached DataVolume names it otherwise.
        assert media.tray_datavolume_name(recorded, 'Cd') == \
            'node-0-vmedia-cd-3'
        assert media.tray_datavolume_name(
            attached(recorded, 'other'), 'Cd') == 'other'

    def test_long_generation_names_differ_and_fit(self):
        vm = make_vm('a' * 62)
        names = {media.datavolume_name(vm, 'Cd', n) for n in range(5)}
        assert len(names) == 5
        assert all(len(n) <= 63 and n[-1].isalnum() for n in names)

    @pytest.mark.parametrize('value', ['x', '-2', '', None])
    def test_a_bad_generation_reads_zero(self, value):
        vm = make_vm()
        if value is not None:
            vm['metadata']['annotations'] = {
                generations.vm_annotation('Cd'): value}
        assert generations.generation(vm, 'Cd') == 0

    def test_long_label_value(self):
        value = media.labels(make_vm('b' * 100), 'Cd')[media.LABEL_VM]
        assert len(value) <= 63


class TestBodies:

    def test_datavolume(self):
        vm = make_vm()
        dv = media.datavolume_body(vm, 'Cd', URL, size_bytes=100 * 1024 ** 2,
                                   storage_class='fast')
        assert dv['apiVersion'] == 'cdi.kubevirt.io/v1beta1'
        assert dv['kind'] == 'DataVolume'
        meta = dv['metadata']
        assert meta['name'] == 'node-0-vmedia-cd'
        assert meta['namespace'] == 'lab'
        assert meta['annotations'] == {media.IMMEDIATE_BIND: 'true'}
        assert meta['labels'][media.LABEL_VM] == 'node-0'
        assert meta['labels'][media.LABEL_DEVICE] == 'cd'
        assert meta['ownerReferences'] == [{
            'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
            'name': 'node-0', 'uid': 'u-1'}]
        assert dv['spec']['source'] == {'http': {'url': URL}}
        storage = dv['spec']['storage']
        assert storage['resources']['requests']['storage'] == '110Mi'
        assert storage['storageClassName'] == 'fast'
        assert media.is_tray(dv, vm, 'Cd')
        assert not media.is_tray(dv, vm, 'Floppy')

    def test_default_size_and_secret(self):
        dv = media.datavolume_body(make_vm(), 'Cd', URL, secret='s',
                                   default_size='2Gi', volume_mode='Block')
        assert dv['spec']['source']['http']['secretRef'] == 's'
        assert dv['spec']['storage'] == {
            'resources': {'requests': {'storage': '2Gi'}},
            'volumeMode': 'Block'}

    def test_cert_configmap_https_only(self):
        https = media.datavolume_body(make_vm(), 'Cd', 'https://h/a.iso',
                                      cert_configmap='ca')
        http = media.datavolume_body(make_vm(), 'Cd', 'http://h/a.iso',
                                     cert_configmap='ca')
        assert https['spec']['source']['http']['certConfigMap'] == 'ca'
        assert 'certConfigMap' not in http['spec']['source']['http']

    def test_not_inserted_annotation(self):
        dv = media.datavolume_body(make_vm(), 'Cd', URL, inserted=False)
        assert dv['metadata']['annotations'][media.ANNOTATION_INSERTED] == (
            'false')

    def test_foreign_dv_is_not_a_tray(self):
        vm = make_vm()
        assert not media.is_tray({'metadata': {'name': 'node-0-vmedia-cd'}},
                                 vm, 'Cd')

    def test_secret(self):
        secret = media.secret_body(make_vm(), 'Cd', 'dv', 'user', 'pw')
        assert secret['metadata']['name'] == 'dv-auth'
        assert secret['data'] == {'accessKeyId': 'dXNlcg==',
                                  'secretKey': 'cHc='}
        assert secret['metadata']['ownerReferences'][0]['uid'] == 'u-1'

    @pytest.mark.parametrize('size,margin,expected', [
        (1, 0.1, '1Mi'), (1024 ** 3, 0.0, '1024Mi'),
        (1024 ** 3, 0.1, '1127Mi')])
    def test_quantity(self, size, margin, expected):
        assert media.quantity(size, margin) == expected

    def test_image_name(self):
        assert media.image_name(URL) == 'ipa boot.iso'
        assert media.image_name('http://host:80/') == 'host'


class TestAttach:

    def test_attach_one_patch_next_boot_order(self):
        vm = make_vm()
        ops = media.attach_ops(vm, 'Cd', 'node-0-vmedia-cd')
        assert [op['op'] for op in ops] == ['add', 'add']
        new = jsonpatch.apply(vm, ops)
        disks = new['spec']['template']['spec']['domain']['devices']['disks']
        assert disks[0] == vm['spec']['template']['spec']['domain'][
            'devices']['disks'][0]
        assert disks[1] == {'name': 'sushy-vmedia-cd',
                            'cdrom': {'bus': 'sata', 'readonly': True},
                            'bootOrder': 3}
        assert new['spec']['template']['spec']['volumes'][1] == {
            'name': 'sushy-vmedia-cd',
            'dataVolume': {'name': 'node-0-vmedia-cd'}}
        assert boot_orders(new) == [1, 3, 2]
        assert media.attached_datavolume(new, 'Cd') == 'node-0-vmedia-cd'

    def test_no_boot_order_when_none_used(self):
        new = attached(make_vm(boot_order=False))
        assert boot_orders(new) == [None, None, None]

    def test_idempotent(self):
        new = attached(make_vm())
        assert media.attach_ops(new, 'Cd', 'node-0-vmedia-cd') == []

    def test_replace_points_volume_at_new_dv(self):
        new = attached(make_vm())
        ops = media.attach_ops(new, 'Cd', 'other')
        assert ops[0]['op'] == 'test'
        again = jsonpatch.apply(new, ops)
        assert media.attached_datavolume(again, 'Cd') == 'other'
        assert boot_orders(again) == boot_orders(new)

    def test_missing_lists_created(self):
        vm = make_vm()
        del vm['spec']['template']['spec']['volumes']
        new = jsonpatch.apply(vm, media.attach_ops(vm, 'Cd', 'dv'))
        assert media.attached_datavolume(new, 'Cd') == 'dv'

    def test_partial_state_completed(self):
        new = attached(make_vm())
        spec = new['spec']['template']['spec']
        del spec['domain']['devices']['disks'][1]
        ops = media.attach_ops(new, 'Cd', 'node-0-vmedia-cd')
        assert len(ops) == 1
        assert media.attached_datavolume(
            jsonpatch.apply(new, ops), 'Cd') == 'node-0-vmedia-cd'


class TestDetach:

    def test_detach_restores_spec(self):
        vm = make_vm()
        new = attached(vm)
        ops = media.detach_ops(new, 'Cd')
        assert [op['op'] for op in ops] == ['test', 'remove'] * 2
        assert jsonpatch.apply(new, ops) == vm

    def test_detach_absent(self):
        assert media.detach_ops(make_vm(), 'Cd') == []

    def test_detach_guarded_against_moved_lists(self):
        new = attached(make_vm())
        ops = media.detach_ops(new, 'Cd')
        moved = copy.deepcopy(new)
        disks = moved['spec']['template']['spec']['domain']['devices'][
            'disks']
        disks.insert(0, disks.pop())
        with pytest.raises(jsonpatch.PatchError):
            jsonpatch.apply(moved, ops)


class TestState:

    def test_no_dv(self):
        assert media.media_state(make_vm(), None) == media.EMPTY
        assert not media.EMPTY.inserted

    def test_importing(self):
        vm = attached(make_vm())
        state = media.media_state(
            vm, make_dv(vm, 'ImportInProgress', '45.12%'))
        assert state.image == URL
        assert state.image_name == 'ipa boot.iso'
        assert state.inserted is False
        assert state.progress == '45.12%'
        assert state.error is None
        assert state.write_protected is True

    def test_succeeded(self):
        vm = attached(make_vm())
        state = media.media_state(vm, make_dv(vm, 'Succeeded', '100.0%'))
        assert state.inserted is True and state.error is None

    def test_unused_reads_empty(self):
        # Its InsertMedia failed, or has not attached it yet.
        vm = make_vm()
        assert media.media_state(vm, make_dv(vm, 'Succeeded')) == \
            media.EMPTY

    def test_inserted_false_shows_its_image(self):
        vm = make_vm()
        dv = make_dv(vm, 'Succeeded')
        dv['metadata']['annotations'][media.ANNOTATION_INSERTED] = 'false'
        state = media.media_state(vm, dv)
        assert state.image == URL and not state.inserted

    def test_succeeded_not_wanted(self):
        vm = attached(make_vm())
        dv = make_dv(vm, 'Succeeded')
        dv['metadata']['annotations'][media.ANNOTATION_INSERTED] = 'false'
        assert not media.media_state(vm, dv).inserted

    def test_failed_exposes_error(self):
        vm = attached(make_vm())
        dv = make_dv(vm, 'Failed', conditions=[
            {'type': 'Running', 'status': 'False', 'reason': 'Error',
             'message': 'expected status code 200, got 404'}])
        state = media.media_state(vm, dv)
        assert state.inserted is False
        assert state.image == URL
        assert '404' in state.error

    def test_failed_without_message(self):
        vm = attached(make_vm())
        assert 'Failed' in media.media_state(vm, make_dv(vm, 'Failed')).error

    def test_retrying_importer_error(self):
        vm = attached(make_vm())
        dv = make_dv(vm, 'ImportInProgress', conditions=[
            {'type': 'Running', 'status': 'False', 'reason': 'Error',
             'message': 'connection refused'}])
        state = media.media_state(vm, dv)
        assert not state.inserted and state.error == 'connection refused'

    def test_deleting_dv_reads_empty(self):
        vm = attached(make_vm())
        dv = make_dv(vm, 'Succeeded')
        dv['metadata']['deletionTimestamp'] = '2026-01-01T00:00:00Z'
        assert media.media_state(vm, dv) == media.EMPTY


class TestPowerOnBlocker:

    def test_no_tray(self):
        vm = make_vm()
        assert tray.power_on_blocker(vm, None, 'Cd') is None

    def test_importing_is_retryable(self):
        vm = attached(make_vm())
        retry, message = tray.power_on_blocker(
            vm, make_dv(vm, 'ImportInProgress', '10%'), 'Cd')
        assert retry and 'in progress' in message and '10%' in message

    def test_failed_is_final(self):
        vm = attached(make_vm())
        retry, message = tray.power_on_blocker(
            vm, make_dv(vm, 'Failed'), 'Cd')
        assert not retry and 'failed' in message

    def test_succeeded(self):
        vm = attached(make_vm())
        assert tray.power_on_blocker(
            vm, make_dv(vm, 'Succeeded'), 'Cd') is None

    def test_missing_dv_is_retryable(self):
        vm = attached(make_vm())
        retry, _ = tray.power_on_blocker(vm, None, 'Cd')
        assert retry


def test_the_token_marks_what_an_insert_made():
    vm = make_vm()
    dv = media.datavolume_body(vm, 'Cd', URL, token='t1')
    secret = media.secret_body(vm, 'Cd', 'd', 'u', 'p', token='t1')
    assert media.made_by(dv, 't1') and media.made_by(secret, 't1')
    assert dv['metadata']['annotations'][media.IMMEDIATE_BIND] == 'true'
    assert not media.made_by(dv, 't2') and not media.made_by(dv, None)
    assert not media.made_by(make_dv(vm), None)


def _running(status, reason='Error', message='got 404'):
    return [{'type': 'Running', 'status': status, 'reason': reason,
             'message': message}]


@pytest.mark.parametrize('phase, restarts, conditions, failed', [
    ('Failed', 0, None, True),
    ('ImportInProgress', 0, _running('False'), False),
    ('ImportInProgress', 1, _running('False'), True),
    ('ImportScheduled', 4, _running('False'), True),
    ('ImportInProgress', 2, _running('True', 'Pod is running', ''), False),
    ('ImportInProgress', 2, _running('False', 'Pending', ''), False),
    ('Succeeded', 3, _running('False', 'Completed', ''), False),
])
def test_failed(phase, restarts, conditions, failed):
    dv = make_dv(make_vm(), phase=phase, conditions=conditions)
    dv['status']['restartCount'] = restarts
    assert imports.failed(dv) is failed
    assert imports.restarts(dv) == restarts
