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

"""subresources.kubevirt.io/v1: bodies, gracePeriod rules, 4xx cases."""

import socket

from kubernetes import client
import pytest
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import objects

pytestmark = pytest.mark.simulator(time_scale=100, stage_delays=vmtools.TINY)


def test_conflict_body_is_virt_apis(simulator, custom):
    vmtools.create_vm(custom, 'run', run_strategy='Always')
    vmtools.wait_running(simulator, custom, 'run')
    assert vmtools.refused(custom, 'run', 'start') == {
        'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
        'status': 'Failure', 'reason': 'Conflict', 'code': 409,
        'message': 'Operation cannot be fulfilled on '
                   'virtualmachine.kubevirt.io "run": VM is already running',
        'details': {'name': 'run', 'group': 'kubevirt.io',
                    'kind': 'virtualmachine'}}


def test_start_stop_restart_need_an_accept_of_any_type(simulator, custom):
    """virt-api's start, stop and restart declare no representation."""
    vmtools.create_vm(custom, 'acc')
    path = ('/apis/subresources.kubevirt.io/v1/namespaces/default/'
            'virtualmachines/acc/')
    for verb in ('start', 'stop', 'restart'):
        with pytest.raises(client.ApiException) as exc:
            vmtools.call(custom.api_client, 'PUT', path + verb, {},
                         accept='application/json')
        assert exc.value.status == 406
    assert vmtools.call(custom.api_client, 'PUT', path + 'start', {},
                        accept='*/*').status_code == 202


def test_start_refused_by_always_and_once(simulator, custom):
    vmtools.create_vm(custom, 'al', run_strategy='Always')
    vmtools.create_vm(custom, 'on', run_strategy='Once')
    vmtools.wait_running(simulator, custom, 'al')
    vmtools.wait_running(simulator, custom, 'on')
    vmtools.crash(simulator, 'on', 'Succeeded')
    vmtools.wait_printable(simulator, custom, 'on', 'Stopped')
    assert vmtools.refused(custom, 'on', 'start')['message'].endswith(
        '"on": Once does not support manual start requests')
    assert vmtools.refused(custom, 'al', 'start')['message'].endswith(
        '"al": VM is already running')


def unreachable_root(name, **options):
    vm = objects.make_vm(name, **options)
    vm['spec']['dataVolumeTemplates'][0]['spec']['source'] = {
        'http': {'url': 'http://127.0.0.1:1/disk.img'}}
    return vm


def test_failed_datavolume_blocks_start(simulator, custom):
    custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS,
        unreachable_root('bad', run_strategy='Always'))
    vmtools.wait_printable(simulator, custom, 'bad', 'DataVolumeError')
    assert vmtools.get(custom, 'bad', vmtools.VMIS) is None
    assert vmtools.refused(custom, 'bad', 'start')['message'].endswith(
        '"bad": Always does not support manual start requests')


@pytest.fixture
def silent_url():
    """An image URL whose server accepts and never answers."""
    with socket.socket() as server:
        server.bind(('127.0.0.1', 0))
        server.listen(8)
        yield 'http://127.0.0.1:%d/disk.img' % server.getsockname()[1]


@pytest.mark.parametrize('printable', ['DataVolumeError', 'Provisioning'])
def test_stopped_vm_ranks_its_datavolumes_first(simulator, custom,
                                                silent_url, printable):
    """virt-controller ranks Provisioning/DataVolumeError above Stopped."""
    name = 'dv' + printable[:4].lower()
    vm = objects.make_vm(name, run_strategy='Manual')
    template = vm['spec'].pop('dataVolumeTemplates')[0]
    url = silent_url if printable == 'Provisioning' else \
        'http://127.0.0.1:1/disk.img'
    template['spec']['source'] = {'http': {'url': url}}
    template['metadata']['annotations'] = {
        'cdi.kubevirt.io/storage.bind.immediate.requested': 'true'}
    custom.create_namespaced_custom_object(
        'cdi.kubevirt.io', 'v1beta1', 'default', 'datavolumes',
        {'metadata': template['metadata'], 'spec': template['spec']})
    custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS, vm)
    vmtools.wait_printable(simulator, custom, name, printable)
    assert vmtools.get(custom, name, vmtools.VMIS) is None


def test_vmi_waits_for_its_datavolumes(simulator, custom):
    vm = unreachable_root('wait', run_strategy='Manual')
    # A DataVolume that is not a template: the VMI is created and waits.
    template = vm['spec'].pop('dataVolumeTemplates')[0]
    custom.create_namespaced_custom_object(
        'cdi.kubevirt.io', 'v1beta1', 'default', 'datavolumes',
        {'metadata': template['metadata'], 'spec': template['spec']})
    custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS,
        vm)
    vmtools.action(custom, 'wait', 'start')
    vmtools.wait_printable(simulator, custom, 'wait', 'DataVolumeError')

    def waiting():
        # The VMI's own status is written apart from the VM's.
        vmi = vmtools.get(custom, 'wait', vmtools.VMIS) or {}
        return [c for c in vmi.get('status', {}).get('conditions', [])
                if c['type'] == 'DataVolumesReady'] and vmi
    vmi = simulator.wait_for(waiting, timeout=10)
    assert vmi['status']['phase'] == 'Pending'
    ready = next(c for c in vmi['status']['conditions']
                 if c['type'] == 'DataVolumesReady')
    assert ready['status'] == 'False'
    assert vmtools.refused(custom, 'wait', 'pause', plural=vmtools.VMIS)[
        'message'].endswith('"wait": VM is not running')


def test_stop_and_restart_of_a_stopped_vm(simulator, custom):
    vmtools.create_vm(custom, 'st')
    vmtools.wait_printable(simulator, custom, 'st', 'Stopped')
    assert vmtools.refused(custom, 'st', 'stop')['message'].endswith(
        '"st": VM is not running')
    assert vmtools.refused(custom, 'st', 'restart')['message'].endswith(
        '"st": RunStategy Halted does not support manual restart requests')
    vmtools.create_vm(custom, 'mn', run_strategy='Manual')
    vmtools.wait_printable(simulator, custom, 'mn', 'Stopped')
    assert vmtools.refused(custom, 'mn', 'restart')['message'].endswith(
        '"mn": VM is not running: Halted')
    assert vmtools.refused(custom, 'mn', 'stop')['message'].endswith(
        '"mn": VM is not running')


def test_rerun_on_failure_stop_is_a_stop_request(simulator, custom):
    """virt-api keeps RerunOnFailure and asks virt-controller to stop."""
    vmtools.create_vm(custom, 'rs', run_strategy='RerunOnFailure')
    _vm, vmi = vmtools.wait_running(simulator, custom, 'rs')
    assert vmtools.action(custom, 'rs', 'stop').status_code == 202
    vm = vmtools.get(custom, 'rs')
    assert vm['spec']['runStrategy'] == 'RerunOnFailure'
    assert vm['status']['stateChangeRequests'] == [
        {'action': 'Stop', 'uid': vmi['metadata']['uid']}]
    vmtools.wait_printable(simulator, custom, 'rs', 'Stopped', timeout=30)
    simulator.wait_for(lambda: vmtools.get(custom, 'rs', vmtools.VMIS)
                       is None, timeout=30)
    vm = vmtools.get(custom, 'rs')
    assert vm['spec']['runStrategy'] == 'RerunOnFailure'
    assert not vm['status'].get('stateChangeRequests')
    assert vmtools.refused(custom, 'rs', 'stop')['message'].endswith(
        '"rs": VM is not running')
    assert vmtools.action(custom, 'rs', 'start').status_code == 202
    vmtools.wait_running(simulator, custom, 'rs')


def test_halted_stop_needs_a_shorter_grace_period(simulator, custom):
    # 3600 s of grace is 36 s of real time: long enough for the refusals
    # below to meet a VM still stopping on a loaded machine.
    vmtools.create_vm(custom, 'hg', run_strategy='Always', grace=3600)
    vmtools.wait_running(simulator, custom, 'hg')
    vmtools.action(custom, 'hg', 'stop')
    vmtools.wait_printable(simulator, custom, 'hg', 'Stopping', timeout=10)
    for body in (None, {'gracePeriod': 3600}, {'gracePeriod': 7200}):
        assert vmtools.refused(custom, 'hg', 'stop', body)['message'].endswith(
            'Halted only supports manual stop requests with a shorter '
            'graceperiod')
    vmtools.action(custom, 'hg', 'stop', {'gracePeriod': 0})
    simulator.wait_for(lambda: vmtools.get(custom, 'hg', vmtools.VMIS) is None,
                       timeout=10)


def test_restart_grace_period_rules(simulator, custom):
    vmtools.create_vm(custom, 'rg', run_strategy='Always')
    vmtools.wait_running(simulator, custom, 'rg')
    status = vmtools.refused(
        custom, 'rg', 'restart', {'gracePeriodSeconds': 5},
        code=400)
    assert status['reason'] == 'BadRequest'
    assert status['message'] == ('For force restart, only gracePeriod=0 is '
                                 'supported for now')
    assert vmtools.refused(custom, 'rg', 'restart', {'gracePeriodSeconds': -1},
                           code=400)['message'] == \
        'gracePeriod has to be greater or equal to 0'


def test_graceful_restart_gives_a_new_vmi(simulator, custom):
    vmtools.create_vm(custom, 'gr', run_strategy='Manual', grace=10)
    vmtools.action(custom, 'gr', 'start')
    _vm, vmi = vmtools.wait_running(simulator, custom, 'gr')
    assert vmtools.action(custom, 'gr', 'restart').status_code == 202
    simulator.wait_for(
        lambda: (vmtools.get(custom, 'gr', vmtools.VMIS) or {}).get(
            'metadata', {}).get('uid') not in (None, vmi['metadata']['uid']))
    vm, _new = vmtools.wait_running(simulator, custom, 'gr')
    assert vm['spec']['runStrategy'] == 'Manual'


def test_dry_run_changes_nothing(simulator, custom):
    vmtools.create_vm(custom, 'dr')
    before = vmtools.wait_printable(simulator, custom, 'dr', 'Stopped')
    assert vmtools.action(custom, 'dr', 'start',
                          {'dryRun': ['All']}).status_code == 202
    after = vmtools.get(custom, 'dr')
    assert after['metadata']['resourceVersion'] == \
        before['metadata']['resourceVersion']


def test_unknown_vm_and_vmi_are_404(simulator, custom):
    status = vmtools.refused(custom, 'ghost', 'start', code=404)
    assert status['message'] == \
        'virtualmachine.kubevirt.io "ghost" not found'
    status = vmtools.refused(
        custom, 'ghost', 'pause', plural=vmtools.VMIS, code=404)
    assert status['message'] == \
        'virtualmachineinstance.kubevirt.io "ghost" not found'


def test_pause_unpause_softreboot_conflicts(simulator, custom):
    vmtools.create_vm(custom, 'pz', run_strategy='Always')
    vmtools.wait_running(simulator, custom, 'pz')
    assert vmtools.refused(custom, 'pz', 'unpause', plural=vmtools.VMIS)[
        'message'].endswith('"pz": VMI is not paused')
    vmtools.action(custom, 'pz', 'pause', plural=vmtools.VMIS)
    assert vmtools.refused(custom, 'pz', 'pause', plural=vmtools.VMIS)[
        'message'].endswith('"pz": VMI is already paused')
    assert vmtools.refused(custom, 'pz', 'softreboot', plural=vmtools.VMIS)[
        'message'].endswith('"pz": VMI is paused')
    vmtools.action(custom, 'pz', 'unpause', plural=vmtools.VMIS)
    assert vmtools.action(custom, 'pz', 'softreboot',
                          plural=vmtools.VMIS).status_code == 200


def test_pause_with_liveness_probe_is_forbidden(simulator, custom):
    vm = objects.make_vm('lp', run_strategy='Always')
    vm['spec']['template']['spec']['livenessProbe'] = {
        'tcpSocket': {'port': 22}}
    custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS, vm)
    vmtools.wait_running(simulator, custom, 'lp')
    status = vmtools.refused(
        custom, 'lp', 'pause', plural=vmtools.VMIS, code=403)
    assert status['message'] == (
        'virtualmachineinstance.kubevirt.io "lp" is forbidden: Pausing VMIs '
        'with LivenessProbe is currently not supported')


def test_subresources_listed_in_discovery(simulator, kube_client):
    resources = client.CustomObjectsApi(kube_client).get_api_resources(
        'subresources.kubevirt.io', 'v1')
    names = {r.name for r in resources.resources}
    assert {'virtualmachines/start', 'virtualmachines/stop',
            'virtualmachines/restart', 'virtualmachineinstances/pause',
            'virtualmachineinstances/unpause',
            'virtualmachineinstances/softreboot'} <= names
