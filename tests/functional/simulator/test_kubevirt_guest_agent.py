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

"""The simulated guest agent: AgentConnected, softreboot, ACPI."""

import pytest
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import virt

pytestmark = pytest.mark.simulator(time_scale=100, stage_delays=vmtools.TINY)


def make_vm(name, agent=None, **options):
    """A VM; ``agent`` 'true'/'false' sets the template annotation."""
    vm = objects.make_vm(name, **dict({'run_strategy': 'Always'},
                                      **options))
    if agent is not None:
        vm['spec']['template']['metadata'].setdefault('annotations', {})[
            virt.ANN_GUEST_AGENT] = agent
    return vm


def create(custom, vm):
    return custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default',
        vmtools.VMS, vm)


def agent(obj):
    return virt.condition(obj, 'AgentConnected')


def wait_agent(sim, custom, name):
    """The VMI once its agent is connected."""
    return sim.wait_for(lambda: (lambda vmi: vmi if agent(vmi) else None)(
        vmtools.get(custom, name, vmtools.VMIS)))


def test_annotation_connects_the_agent_after_running(simulator, custom):
    create(custom, make_vm('plain'))
    create(custom, make_vm('ga', agent='true'))
    vmi = wait_agent(simulator, custom, 'ga')
    cond = agent(vmi)
    assert cond['status'] == 'True' and cond['lastProbeTime']
    assert vmi['status']['phase'] == 'Running'
    assert vmi['status']['guestOSInfo']['id'] == 'fedora'
    # virt-controller copies the VMI's conditions to the VM.
    vmtools.wait_vm(simulator, custom, 'ga', agent)
    # 'plain' ran first: had it an agent, it would be connected by now.
    vmtools.wait_running(simulator, custom, 'plain')
    assert agent(vmtools.get(custom, 'plain', vmtools.VMIS)) is None
    assert agent(vmtools.get(custom, 'plain')) is None


@pytest.mark.simulator(time_scale=100, stage_delays=vmtools.TINY,
                       guest_agent=True)
def test_simulator_default_and_opt_out(simulator, custom):
    create(custom, make_vm('off', agent='false'))
    create(custom, make_vm('on'))
    wait_agent(simulator, custom, 'on')
    vmtools.wait_running(simulator, custom, 'off')
    assert agent(vmtools.get(custom, 'off', vmtools.VMIS)) is None


def test_no_agent_while_started_paused(simulator, custom):
    create(custom, make_vm('pa', agent='true', run_strategy='Halted'))
    vmtools.wait_printable(simulator, custom, 'pa', 'Stopped')
    vmtools.action(custom, 'pa', 'start', {'paused': True})
    vmtools.wait_printable(simulator, custom, 'pa', 'Paused')
    create(custom, make_vm('probe', agent='true'))
    wait_agent(simulator, custom, 'probe')
    assert agent(vmtools.get(custom, 'pa', vmtools.VMIS)) is None
    vmtools.action(custom, 'pa', 'unpause', plural=vmtools.VMIS)
    wait_agent(simulator, custom, 'pa')


def test_softreboot_keeps_the_vmi_and_reconnects_the_agent(simulator,
                                                           custom):
    create(custom, make_vm('sr', agent='true'))
    before = wait_agent(simulator, custom, 'sr')
    seen = []
    simulator.store.subscribe(
        lambda event, rt, obj, old: seen.append(agent(obj))
        if rt.key == virt.VMI_RT.key else None)
    assert vmtools.action(custom, 'sr', 'softreboot',
                          plural=vmtools.VMIS).status_code == 200
    after = wait_agent(simulator, custom, 'sr')
    assert after['metadata']['uid'] == before['metadata']['uid']
    assert after['status']['phase'] == 'Running'
    assert seen[0] is None  # dropped while the guest rebooted
    vmtools.wait_printable(simulator, custom, 'sr', 'Running')


def test_softreboot_with_terminate_policy_and_agent(simulator, custom):
    vm = make_vm('tp', agent='true')
    vm['spec']['template']['spec']['domain']['rebootPolicy'] = 'Terminate'
    create(custom, vm)
    first = wait_agent(simulator, custom, 'tp')
    vmtools.action(custom, 'tp', 'softreboot', plural=vmtools.VMIS)
    second = simulator.wait_for(lambda: (
        lambda vmi: vmi if vmi and agent(vmi) and vmi['metadata']['uid'] !=
        first['metadata']['uid'] else None)(
            vmtools.get(custom, 'tp', vmtools.VMIS)))
    assert second['status']['phase'] == 'Running'


def test_softreboot_needs_agent_or_acpi(simulator, custom):
    for name, value in (('noacpi', None), ('noacpi-ga', 'true')):
        vm = make_vm(name, agent=value)
        vm['spec']['template']['spec']['domain']['features'] = {
            'acpi': {'enabled': False}}
        create(custom, vm)
    vmtools.wait_running(simulator, custom, 'noacpi')
    status = vmtools.refused(
        custom, 'noacpi', 'softreboot', plural=vmtools.VMIS)
    assert status['message'] == (
        'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io'
        ' "noacpi": VMI neither have the agent connected nor the ACPI '
        'feature enabled')
    wait_agent(simulator, custom, 'noacpi-ga')
    assert vmtools.action(custom, 'noacpi-ga', 'softreboot',
                          plural=vmtools.VMIS).status_code == 200
