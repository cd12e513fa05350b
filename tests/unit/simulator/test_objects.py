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

"""Unit tests: generated VM bodies."""

import uuid

from sushy_kubevirt.simulator import admission
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import virt


def test_make_vm_is_valid_and_pins_its_identity():
    vm = objects.make_vm('vm-00001', 'ns-001')
    assert admission.validate_vm(vm) == []
    spec = vm['spec']['template']['spec']
    assert spec['domain']['firmware']['uuid'] == \
        str(uuid.uuid5(uuid.UUID('6a1a24a1-4061-4607-8bf4-a3963d0c5895'),
                       'vm-00001'))
    assert spec['domain']['firmware']['serial'] == 'vm-00001'
    assert spec['domain']['devices']['disks'][0]['bootOrder'] == 1
    assert spec['domain']['devices']['interfaces'][0]['bootOrder'] == 2
    assert vm['spec']['dataVolumeTemplates'][0]['metadata']['name'] == \
        spec['volumes'][0]['dataVolume']['name']


def test_macs_are_stable_unique_and_local():
    macs = {objects.make_vm('vm-%d' % i)['spec']['template']['spec'][
        'domain']['devices']['interfaces'][0]['macAddress']
        for i in range(200)}
    assert len(macs) == 200
    mac = virt.stable_mac('ns', 'vm', 'default')
    assert mac == virt.stable_mac('ns', 'vm', 'default')
    assert mac.startswith('02:') and len(mac.split(':')) == 6


def test_namespace_names():
    assert objects.namespace_names(1) == ['default']
    assert objects.namespace_names(3) == ['ns-000', 'ns-001', 'ns-002']


def test_run_strategy_from_running():
    assert virt.run_strategy({'spec': {'running': True}}) == 'Always'
    assert virt.run_strategy({'spec': {'running': False}}) == 'Halted'
    assert virt.run_strategy({'spec': {'runStrategy': 'Manual'}}) == \
        'Manual'
