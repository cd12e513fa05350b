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

"""Opt-in end-to-end checks against a real cluster with KubeVirt.

Skipped unless ``KUBECONFIG`` and ``SUSHY_KUBEVIRT_E2E_NAMESPACE`` are set.
The emulator runs in this process and serves the VMs of that namespace;
``SUSHY_KUBEVIRT_E2E_VM`` names the VM to power-cycle (default: the first
one). Every test puts back what it changed.
"""

import os

import pytest
import sushy
from tests.functional.emulator import harness

NAMESPACE = os.environ.get('SUSHY_KUBEVIRT_E2E_NAMESPACE')
KUBECONFIG = os.environ.get('KUBECONFIG')
VM_NAME = os.environ.get('SUSHY_KUBEVIRT_E2E_VM')
#: Seconds a real cluster gets to schedule, start or stop a VM.
POWER_TIMEOUT = float(os.environ.get('SUSHY_KUBEVIRT_E2E_TIMEOUT', '300'))

pytestmark = pytest.mark.skipif(
    not (NAMESPACE and KUBECONFIG),
    reason='set KUBECONFIG and SUSHY_KUBEVIRT_E2E_NAMESPACE to run the '
           'end-to-end tests against a real cluster')


@pytest.fixture(scope='module')
def emulator(tmp_path_factory):
    path = tmp_path_factory.mktemp('e2e') / 'emulator.conf'
    config = harness.write_config(
        path, KUBECONFIG.split(os.pathsep)[0],
        SUSHY_EMULATOR_KUBEVIRT_NAMESPACES=[NAMESPACE])
    with harness.InProcess(config) as server:
        yield server


@pytest.fixture(scope='module')
def redfish(emulator):
    return sushy.Sushy(emulator.url + '/redfish/v1/',
                       server_side_retries=0)


@pytest.fixture(scope='module')
def system(redfish):
    members = redfish.get_system_collection().get_members()
    if not members:
        pytest.skip('no VirtualMachine in namespace %s' % NAMESPACE)
    if VM_NAME:
        return redfish.get_system(
            '/redfish/v1/Systems/%s.%s' % (NAMESPACE, VM_NAME))
    return members[0]


def _wait_power(system, state):
    def reached():
        system.refresh()
        return system.power_state == state
    harness.wait_until(reached, POWER_TIMEOUT, 2.0, 'power state %s' % state)


def test_list_and_get_systems(redfish, system):
    ids = redfish.get_system_collection().members_identities
    assert system.path in ids
    again = redfish.get_system(system.path)
    assert again.uuid == system.identity
    assert again.power_state in set(sushy.PowerState)


def test_power_round_trip(system):
    system.refresh()
    was_on = system.power_state == sushy.SYSTEM_POWER_STATE_ON
    try:
        system.reset_system(sushy.RESET_ON)
        _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)
        system.reset_system(sushy.RESET_FORCE_OFF)
        _wait_power(system, sushy.SYSTEM_POWER_STATE_OFF)
    finally:
        if was_on:
            system.reset_system(sushy.RESET_ON)
            _wait_power(system, sushy.SYSTEM_POWER_STATE_ON)


def test_boot_device_round_trip(system):
    system.refresh()
    before = system.boot.target
    allowed = {getattr(v, 'value', v)
               for v in system.boot.allowed_values or ()}
    target = (sushy.BOOT_SOURCE_TARGET_PXE
              if before != sushy.BOOT_SOURCE_TARGET_PXE
              else sushy.BOOT_SOURCE_TARGET_HDD)
    if allowed and target.value not in allowed:
        pytest.skip('%s is not an allowed boot target' % target)
    try:
        system.set_system_boot_options(
            target, enabled=sushy.BOOT_SOURCE_ENABLED_CONTINUOUS)
        system.refresh()
        assert system.boot.target == target
    finally:
        if before is not None:
            system.set_system_boot_options(
                before, enabled=sushy.BOOT_SOURCE_ENABLED_CONTINUOUS)
            system.refresh()
            assert system.boot.target == before
