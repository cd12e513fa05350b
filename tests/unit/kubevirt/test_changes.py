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

import copy

from tests.unit.kubevirt import fixtures

from sushy_kubevirt.kubevirt import changes
from sushy_kubevirt.kubevirt import identity

ROOT = fixtures.disk('root', order=1)


def _vm(**kwargs):
    kwargs.setdefault('disks', [ROOT, fixtures.disk('cd', kind='cdrom')])
    return fixtures.vm(**kwargs)


def _ids(old, new):
    return [(c.message_id, c.origin.rpartition('/')[2])
            for c in changes.events(old, new)]


def test_created_removed_and_a_new_id():
    vm = _vm()
    facts = changes.facts(vm, None, {})
    uuid = identity.firmware_uuid(vm)
    assert _ids(None, facts) == [('ResourceCreated', uuid)]
    assert _ids(facts, None) == [('ResourceRemoved', uuid)]
    other = copy.deepcopy(vm)
    other['spec']['template']['spec']['domain']['firmware'] = {
        'uuid': '11111111-2222-3333-4444-555555555555'}
    assert _ids(facts, changes.facts(other, None, {})) == [
        ('ResourceRemoved', uuid),
        ('ResourceCreated', '11111111-2222-3333-4444-555555555555')]


def test_each_power_state_has_its_message():
    vm = _vm(strategy='Always')
    off = changes.facts(_vm(), None, {})
    steps = [(vm, fixtures.vmi('Scheduling'), 'ResourcePoweringOn'),
             (vm, fixtures.vmi('Running'), 'ResourcePoweredOn'),
             (vm, fixtures.vmi('Running', conditions=['Paused']),
              'ResourcePaused'),
             (vm, fixtures.vmi('Running', deleting=True),
              'ResourcePoweringOff'),
             (_vm(), None, 'ResourcePoweredOff')]
    old = off
    for each_vm, vmi, message in steps:
        new = changes.facts(each_vm, vmi, {})
        found = changes.events(old, new)
        assert [c.message_id for c in found] == [message]
        assert found[0].args == (new.system,)
        old = new


def test_nothing_visible_changed_is_no_event():
    vm = _vm()
    before = changes.facts(vm, None, {})
    edited = copy.deepcopy(vm)
    edited['metadata']['labels'] = {'team': 'a'}
    edited['status']['printableStatus'] = 'Stopped'
    assert changes.events(before, changes.facts(edited, None, {})) == []


def test_boot_and_hardware_changes_are_one_resource_changed():
    vm = _vm()
    before = changes.facts(vm, None, {})
    edited = copy.deepcopy(vm)
    domain = edited['spec']['template']['spec']['domain']
    domain['cpu'] = {'cores': 8}
    domain['devices']['disks'][0]['bootOrder'] = None
    domain['devices']['disks'][1]['bootOrder'] = 1
    assert _ids(before, changes.facts(edited, None, {})) == [
        ('ResourceChanged', identity.firmware_uuid(vm))]


def _dv(phase, error=None):
    dv = {'metadata': {'name': 'tray'},
          'spec': {'source': {'http': {'url': 'http://img/x.iso'}}},
          'status': {'phase': phase}}
    if error:
        dv['status']['conditions'] = [{'type': 'Running', 'status': 'False',
                                       'reason': 'Error', 'message': error}]
    return dv


def test_media_events_name_the_virtual_media():
    vm = _vm(volumes=[{'name': 'cd', 'dataVolume': {'name': 'tray'}}])
    empty = changes.facts(vm, None, {'Cd': None})
    failing = changes.facts(vm, None, {'Cd': _dv('ImportInProgress',
                                                 'HTTP 404')})
    found = changes.events(empty, failing)
    assert [(c.message_id, c.origin.rpartition('/')[2], c.args)
            for c in found] == [
        ('ResourceChanged', 'Cd', ()),
        ('ResourceErrorsDetected', 'Cd', ('Image', 'HTTP 404'))]
    assert found[0].origin == changes.media_uri(empty.system, 'Cd')
    done = changes.facts(vm, None, {'Cd': _dv('Succeeded')})
    assert [c.message_id for c in changes.events(failing, done)] == [
        'ResourceChanged', 'ResourceErrorsCorrected']
    assert [c.message_id for c in changes.events(
        done, changes.facts(vm, None, {'Cd': None}))] == ['ResourceChanged']
