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
"""Firmware update tasks and versions (pure)."""

import json

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import applied
from sushy_kubevirt.kubevirt import firmwareupdate as fw
from sushy_kubevirt.kubevirt import jsonpatch

VMI_A = {'metadata': {'uid': 'a'}}
VMI_B = {'metadata': {'uid': 'b'}}


@pytest.mark.parametrize('url, version', [
    ('http://h/fw/bios-2.1.0.bin', '2.1.0'),
    ('https://h/BIOS_v10.22.bin?sig=1.2.3', '10.22'),
    ('http://h/1.2/bmc-3.4.5-rc1.img', '3.4.5'),
    ('http://h/fw/bios%2D7.7.bin', '7.7'),
    ('http://h/fw/bios-2.bin', 'sha-'),
    ('http://h/fw/', 'sha-'),
])
def test_version_of(url, version):
    assert fw.version_of(url).startswith(version)


def test_the_digest_is_stable_and_short():
    assert fw.version_of('http://h/a.bin') == fw.version_of('http://h/a.bin')
    assert len(fw.version_of('http://h/a.bin')) == len('sha-') + 8
    assert fw.version_of('http://h/a.bin') != fw.version_of('http://h/b.bin')


@pytest.mark.parametrize('url, component', [
    ('http://h/fw/bios-2.1.0.bin', fw.BIOS),
    ('http://h/fw/BMC_4.2.img', fw.BMC),
    ('http://h/bmc/firmware-1.0.bin', fw.BIOS),
])
def test_component_of(url, component):
    assert fw.component_of(url) == component


def _run(vm, *builds):
    for build in builds:
        vm = jsonpatch.apply(vm, build(vm))
    return vm


def test_a_bios_update_applies_at_the_next_start():
    vm = _run(fx.vm(), lambda vm: fw.new_task_ops(
        vm, fw.BIOS, 'http://h/bios-2.0.1.bin', 100.0, 35.0, VMI_A))
    assert fw.task(vm)['state'] == fw.NEW and fw.busy(vm, 101.0)
    vm = _run(vm, lambda vm: fw.running_ops(vm, 1, 101.0),
              lambda vm: fw.outcome_ops(vm, 1, 110.0))
    record = fw.task(vm)
    assert (record['state'], record['end']) == (fw.COMPLETED, 110.0)
    assert not fw.busy(vm, 111.0)
    assert fw.versions(vm, VMI_A)['BiosVersion'] == '1.0.0'
    assert fw.pending(vm, VMI_A) and applied.restart_pending(vm, VMI_A)
    assert fw.versions(vm, VMI_B)['BiosVersion'] == '2.0.1'
    assert not fw.pending(vm, VMI_B)
    folded = _run(vm, lambda vm: fw.apply_pending_ops(vm, VMI_B))
    assert fw.PENDING_ANNOTATION not in folded['metadata']['annotations']
    assert fw.versions(folded) == {'BiosVersion': '2.0.1',
                                   'FirmwareVersion': '1.00'}
    assert fw.apply_pending_ops(vm, VMI_A) == []
    started = _run(vm, fw.boot_ops)
    assert fw.versions(started, VMI_A)['BiosVersion'] == '2.0.1'


def test_a_restart_while_the_image_is_checked_applies_it():
    """Ironic restarts a node as soon as its BIOS update task runs."""
    vm = _run(fx.vm(), lambda vm: fw.new_task_ops(
        vm, fw.BIOS, 'http://h/bios-2.0.2.bin', 100.0, 35.0, VMI_A),
        lambda vm: fw.outcome_ops(vm, 1, 110.0))
    assert fw.versions(vm, VMI_B)['BiosVersion'] == '2.0.2'
    assert fw.versions(vm, VMI_A)['BiosVersion'] == '1.0.0'
    off = _run(fx.vm(), lambda vm: fw.new_task_ops(
        vm, fw.BIOS, 'http://h/bios-2.0.3.bin', 100.0, 35.0),
        lambda vm: fw.outcome_ops(vm, 1, 110.0))
    assert fw.versions(off)['BiosVersion'] == '1.0.0'
    assert fw.versions(off, VMI_A)['BiosVersion'] == '2.0.3'


def test_a_bmc_update_applies_at_once_and_numbers_follow():
    vm = _run(fx.vm(), lambda vm: fw.new_task_ops(
        vm, fw.BIOS, 'http://h/x.bin', 1.0, 35.0),
        lambda vm: fw.outcome_ops(vm, 1, 2.0, 'HEAD answered 404'),
        lambda vm: fw.new_task_ops(vm, fw.BMC, 'http://h/bmc-1.5.bin',
                                   3.0, 35.0))
    assert fw.task(vm)['n'] == 2
    assert fw.outcome_ops(vm, 1, 4.0) == [], 'task 1 is gone'
    vm = _run(vm, lambda vm: fw.outcome_ops(vm, 2, 4.0))
    assert fw.versions(vm)['FirmwareVersion'] == '1.5'
    assert not fw.pending(vm)


def test_a_failed_update_changes_no_version():
    vm = _run(fx.vm(), lambda vm: fw.new_task_ops(
        vm, fw.BIOS, 'http://h/bios-3.0.bin', 1.0, 35.0),
        lambda vm: fw.outcome_ops(vm, 1, 2.0, 'HEAD answered 404'))
    record = fw.task(vm)
    assert (record['state'], record['reason']) == (fw.EXCEPTION,
                                                   'HEAD answered 404')
    assert fw.versions(vm, VMI_B)['BiosVersion'] == '1.0.0'


def test_an_unfinished_task_past_its_bound_reads_interrupted():
    vm = _run(fx.vm(), lambda vm: fw.new_task_ops(
        vm, fw.BIOS, 'http://h/bios-3.0.bin', 100.0, 35.0))
    record = fw.task(vm)
    assert fw.shown(record, 135.0)['state'] == fw.NEW
    late = fw.shown(record, 136.0)
    assert (late['state'], late['reason'], late['end']) == (
        fw.EXCEPTION, fw.INTERRUPTED, 135.0)
    assert not fw.busy(_run(vm, lambda vm: []), 136.0)
    running = fw.task(_run(vm, lambda vm: fw.running_ops(vm, 1, 130.0)))
    assert fw.shown(running, 165.0)['state'] == fw.RUNNING
    assert fw.shown(running, 166.0)['state'] == fw.EXCEPTION


def test_corrupt_annotations_read_defaults():
    vm = fx.vm(annotations={fw.TASK_ANNOTATION: '{oops',
                            fw.PENDING_ANNOTATION: '[1]',
                            fw.VERSIONS_ANNOTATION: json.dumps(
                                {'BiosVersion': 3})})
    assert fw.task(vm) is None and not fw.pending(vm, VMI_A)
    assert fw.versions(vm) == fw.DEFAULTS
    assert fw.boot_ops(vm) == []
