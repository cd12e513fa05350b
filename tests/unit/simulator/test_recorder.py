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
"""The Events the simulator's KubeVirt and CDI record."""

from sushy_kubevirt.simulator import recorder


def vmi(phase='', deleting=False):
    meta = {'name': 'vm1', 'namespace': 'ns', 'uid': 'u-1',
            'ownerReferences': [{'kind': 'VirtualMachine', 'name': 'vm1'}]}
    if deleting:
        meta['deletionTimestamp'] = '2026-01-01T00:00:00Z'
    return {'metadata': meta, 'status': {'phase': phase} if phase else {}}


def reasons(found):
    return [(kind, reason) for kind, _, _, reason, _, _ in found]


def test_vmi_lifecycle():
    created = recorder.vm_events('ADDED', vmi(), None)
    assert reasons(created) == [('VirtualMachine', 'SuccessfulCreate'),
                                ('VirtualMachineInstance',
                                 'SuccessfulCreate')]
    assert created[0][4] == ('Started the virtual machine by creating the '
                             'new virtual machine instance vm1')
    assert created[1][4].startswith('Created virtual machine pod '
                                    'virt-launcher-vm1-')
    assert reasons(recorder.vm_events('MODIFIED', vmi('Running'),
                                      vmi('Scheduled'))) == [
        ('VirtualMachineInstance', 'Started')]
    assert recorder.vm_events('MODIFIED', vmi('Running'),
                              vmi('Running')) == []
    stopping = recorder.vm_events('MODIFIED', vmi('Running', True),
                                  vmi('Running'))
    assert reasons(stopping) == [('VirtualMachine', 'SuccessfulDelete'),
                                 ('VirtualMachineInstance', 'ShuttingDown')]
    assert stopping[0][4].endswith('virtual machine instance u-1')
    assert reasons(recorder.vm_events(
        'MODIFIED', vmi('Succeeded', True), vmi('Running', True))) == [
        ('VirtualMachineInstance', 'Stopped')]
    assert recorder.vm_events('DELETED', vmi('Succeeded', True), None) == []


def dv(phase, http=True):
    spec = {'source': {'http': {'url': 'http://x/a.iso'}} if http
            else {'blank': {}}}
    return {'metadata': {'name': 'vm1-cd', 'namespace': 'ns'},
            'spec': spec, 'status': {'phase': phase}}


def test_datavolume_import():
    assert recorder.dv_events('MODIFIED', dv('ImportScheduled'),
                              dv('Pending')) == [
        ('DataVolume', 'vm1-cd', 'Normal', 'ImportScheduled',
         'Import into vm1-cd scheduled', recorder.CDI_CONTROLLER)]
    assert recorder.dv_events('MODIFIED', dv('Succeeded'),
                              dv('ImportInProgress'))[0][3:5] == (
        'ImportSucceeded', 'Successfully imported into PVC vm1-cd')
    failed = recorder.dv_events('MODIFIED', dv('Failed'),
                                dv('ImportInProgress'))
    assert failed[0][2:5] == ('Warning', 'ImportFailed',
                              'Failed to import into PVC vm1-cd')
    assert recorder.dv_events('MODIFIED', dv('Succeeded', http=False),
                              dv('Pending', http=False)) == []
    assert recorder.dv_events('MODIFIED', dv('Succeeded'),
                              dv('Succeeded')) == []
