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

"""VM controller and VMI lifecycle through the official client."""

import time

from kubernetes import client
import pytest
from tests.functional.simulator import apitools
from tests.functional.simulator.vmtools import action
from tests.functional.simulator.vmtools import call
from tests.functional.simulator.vmtools import crash
from tests.functional.simulator.vmtools import create_vm
from tests.functional.simulator.vmtools import G
from tests.functional.simulator.vmtools import get
from tests.functional.simulator.vmtools import TINY
from tests.functional.simulator.vmtools import V
from tests.functional.simulator.vmtools import VMIS
from tests.functional.simulator.vmtools import VMS
from tests.functional.simulator.vmtools import wait_printable
from tests.functional.simulator.vmtools import wait_running
from tests.functional.simulator.vmtools import wait_vm

from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import virt

pytestmark = pytest.mark.simulator(time_scale=100, stage_delays=TINY)


def patch_vm(custom, name, ops):
    call(custom.api_client, 'PATCH',
         '/apis/kubevirt.io/v1/namespaces/default/virtualmachines/' + name,
         ops, 'application/json-patch+json')


def watch(custom, plural, until, timeout=10, **params):
    """Watch ``plural`` and return events up to ``until(event)``."""
    resp = custom.list_namespaced_custom_object(
        G, V, 'default', plural, watch=True, _preload_content=False,
        _request_timeout=timeout, timeout_seconds=timeout, **params)
    try:
        events = apitools.read_events(resp, until=until)
    finally:
        resp.close()
    if events and until(events[-1]):
        return events
    raise AssertionError('watch ended before the condition: %s' % events)


def current_rv(custom):
    return custom.list_namespaced_custom_object(
        G, V, 'default', VMS)['metadata']['resourceVersion']


def test_always_walks_the_stages_and_reports_running(simulator, custom):
    # From the version before the create: every phase is seen, however
    # late the watch starts (a watch from "now" starts at the current one).
    since = current_rv(custom)
    created = create_vm(custom, 'a1', run_strategy='Always')
    events = watch(custom, VMIS, lambda e: e['object'].get(
        'status', {}).get('phase') == 'Running', resource_version=since)
    phases = []
    for event in events:
        phase = event['object'].get('status', {}).get('phase')
        if phase and phase not in phases:
            phases.append(phase)
    assert phases == ['Pending', 'Scheduling', 'Scheduled', 'Running']
    vm, vmi = wait_running(simulator, custom, 'a1')
    status = vm['status']
    assert status['ready'] is True and status['created'] is True
    assert status['runStrategy'] == 'Always'
    assert {'type': 'Ready', 'status': 'True'}.items() <= next(
        c for c in status['conditions'] if c['type'] == 'Ready').items()
    assert vmi['metadata']['ownerReferences'][0]['uid'] == \
        created['metadata']['uid']
    assert vmi['spec']['domain']['firmware'] == \
        created['spec']['template']['spec']['domain']['firmware']
    iface = created['spec']['template']['spec']['domain']['devices'][
        'interfaces'][0]
    assert vmi['status']['interfaces'][0]['mac'] == iface['macAddress']
    assert vmi['status']['nodeName']


def test_generated_mac_is_stable(simulator, custom):
    vm = objects.make_vm('mac', run_strategy='Always')
    del vm['spec']['template']['spec']['domain']['devices']['interfaces'][
        0]['macAddress']
    custom.create_namespaced_custom_object(G, V, 'default', VMS, vm)
    _vm, vmi = wait_running(simulator, custom, 'mac')
    assert vmi['status']['interfaces'][0]['mac'] == \
        virt.stable_mac('default', 'mac', 'default')


def test_halted_start_then_stop(simulator, custom):
    create_vm(custom, 'h1')
    wait_printable(simulator, custom, 'h1', 'Stopped')
    assert action(custom, 'h1', 'start').status_code == 202
    vm, _vmi = wait_running(simulator, custom, 'h1')
    assert vm['spec']['runStrategy'] == 'Always'
    assert action(custom, 'h1', 'stop').status_code == 202
    vm = wait_printable(simulator, custom, 'h1', 'Stopped')
    assert vm['spec']['runStrategy'] == 'Halted'
    assert vm['status']['created'] is False
    assert get(custom, 'h1', VMIS) is None


def test_manual_uses_state_change_requests(simulator, custom):
    create_vm(custom, 'm1', run_strategy='Manual')
    wait_printable(simulator, custom, 'm1', 'Stopped')
    rv = current_rv(custom)
    action(custom, 'm1', 'start')
    watch(custom, VMS, lambda e: e['object'].get('status', {}).get(
        'stateChangeRequests') == [{'action': 'Start'}], resource_version=rv)
    vm, vmi = wait_running(simulator, custom, 'm1')
    assert 'stateChangeRequests' not in vm['status']
    rv = current_rv(custom)
    action(custom, 'm1', 'stop', {'gracePeriod': 0})
    watch(custom, VMS, lambda e: e['object'].get('status', {}).get(
        'stateChangeRequests') == [{'action': 'Stop',
                                    'uid': vmi['metadata']['uid']}],
        resource_version=rv)
    vm = wait_printable(simulator, custom, 'm1', 'Stopped')
    assert vm['spec']['runStrategy'] == 'Manual'
    assert get(custom, 'm1', VMIS) is None


def test_always_recreates_a_failed_vmi(simulator, custom):
    create_vm(custom, 'a2', run_strategy='Always')
    _vm, vmi = wait_running(simulator, custom, 'a2')
    crash(simulator, 'a2')
    simulator.wait_for(lambda: (get(custom, 'a2', VMIS) or {}).get(
        'metadata', {}).get('uid') not in (None, vmi['metadata']['uid']))
    wait_running(simulator, custom, 'a2')


def test_rerun_on_failure(simulator, custom):
    create_vm(custom, 'r1', run_strategy='RerunOnFailure')
    _vm, vmi = wait_running(simulator, custom, 'r1')
    crash(simulator, 'r1', 'Failed')
    simulator.wait_for(lambda: (get(custom, 'r1', VMIS) or {}).get(
        'metadata', {}).get('uid') not in (None, vmi['metadata']['uid']))
    wait_running(simulator, custom, 'r1')
    crash(simulator, 'r1', 'Succeeded')
    vm = wait_printable(simulator, custom, 'r1', 'Stopped')
    simulator.wait_for(lambda: get(custom, 'r1', VMIS) is None)
    assert get(custom, 'r1')['status']['printableStatus'] == 'Stopped'
    assert vm['spec']['runStrategy'] == 'RerunOnFailure'


def test_once_runs_once(simulator, custom):
    create_vm(custom, 'o1', run_strategy='Once')
    _vm, vmi = wait_running(simulator, custom, 'o1')
    crash(simulator, 'o1', 'Succeeded')
    wait_printable(simulator, custom, 'o1', 'Stopped')
    assert get(custom, 'o1', VMIS)['metadata']['uid'] == \
        vmi['metadata']['uid']
    with pytest.raises(client.ApiException) as exc:
        action(custom, 'o1', 'restart')
    assert exc.value.status == 409


def test_restart_required_then_restart_applies_template(simulator, custom):
    create_vm(custom, 'rr', run_strategy='Always')
    vm, vmi = wait_running(simulator, custom, 'rr')
    assert not any(c['type'] == 'RestartRequired'
                   for c in vm['status']['conditions'])
    base = '/spec/template/spec/domain/devices/'
    patch_vm(custom, 'rr', [
        {'op': 'replace', 'path': base + 'disks/0/bootOrder', 'value': 2},
        {'op': 'replace', 'path': base + 'interfaces/0/bootOrder',
         'value': 1}])
    vm = wait_vm(simulator, custom, 'rr', lambda vm: any(
        c['type'] == 'RestartRequired' for c in vm['status']['conditions']))
    cond = next(c for c in vm['status']['conditions']
                if c['type'] == 'RestartRequired')
    assert cond['status'] == 'True'
    assert cond['message'] == ('a non-live-updatable field was changed in '
                               'the template spec')
    assert vm['status']['desiredGeneration'] == \
        vm['status']['observedGeneration'] + 1
    action(custom, 'rr', 'restart', {'gracePeriodSeconds': 0})
    simulator.wait_for(lambda: (get(custom, 'rr', VMIS) or {}).get(
        'metadata', {}).get('uid') not in (None, vmi['metadata']['uid']))
    vm, new = wait_running(simulator, custom, 'rr')
    assert new['spec']['domain']['devices']['interfaces'][0][
        'bootOrder'] == 1
    assert not any(c['type'] == 'RestartRequired'
                   for c in vm['status']['conditions'])


def test_graceful_stop_honours_grace_period(simulator, custom):
    # 600 s of simulated grace at time scale 100 is 6 s of real time.
    create_vm(custom, 'g1', run_strategy='Always', grace=600)
    wait_running(simulator, custom, 'g1')
    began = time.monotonic()
    action(custom, 'g1', 'stop')
    simulator.wait_for(lambda: get(custom, 'g1', VMIS)['metadata'].get(
        'deletionTimestamp'), timeout=5)
    wait_printable(simulator, custom, 'g1', 'Stopping', timeout=5)
    wait_printable(simulator, custom, 'g1', 'Stopped', timeout=30)
    assert time.monotonic() - began >= 5.5


def test_force_stop_is_immediate(simulator, custom):
    # 3600 s of grace would be 36 s of real time.
    create_vm(custom, 'f1', run_strategy='Always', grace=3600)
    wait_running(simulator, custom, 'f1')
    action(custom, 'f1', 'stop', {'gracePeriod': 0})
    simulator.wait_for(lambda: get(custom, 'f1', VMIS) is None, timeout=10)
    assert get(custom, 'f1')['spec']['runStrategy'] == 'Halted'


def test_graceful_stop_then_force_stop_shortens_it(simulator, custom):
    create_vm(custom, 'f2', run_strategy='Always', grace=3600)
    wait_running(simulator, custom, 'f2')
    action(custom, 'f2', 'stop')
    wait_printable(simulator, custom, 'f2', 'Stopping', timeout=10)
    # Halted now: only a shorter grace period is accepted.
    action(custom, 'f2', 'stop', {'gracePeriod': 0})
    simulator.wait_for(lambda: get(custom, 'f2', VMIS) is None, timeout=10)


def test_pause_unpause_and_paused_start(simulator, custom):
    create_vm(custom, 'p1', run_strategy='Always')
    wait_running(simulator, custom, 'p1')
    assert action(custom, 'p1', 'pause', plural=VMIS).status_code == 200
    vm = wait_printable(simulator, custom, 'p1', 'Paused')
    paused = next(c for c in vm['status']['conditions']
                  if c['type'] == 'Paused')
    assert paused['status'] == 'True'
    # Not Ready while paused: the launcher pod's readiness gate is False.
    assert vm['status']['ready'] is False
    ready = {c['type']: c for c in get(custom, 'p1', VMIS)['status'][
        'conditions']}['Ready']
    assert (ready['status'], ready['reason']) == (
        'False', 'ReadinessGatesNotReady')
    action(custom, 'p1', 'unpause', plural=VMIS)
    vm = wait_printable(simulator, custom, 'p1', 'Running')
    assert not any(c['type'] == 'Paused' for c in vm['status']['conditions'])
    assert vm['status']['ready'] is True
    create_vm(custom, 'p2')
    wait_printable(simulator, custom, 'p2', 'Stopped')
    action(custom, 'p2', 'start', {'paused': True})
    wait_printable(simulator, custom, 'p2', 'Paused')
    assert get(custom, 'p2', VMIS)['spec']['startStrategy'] == 'Paused'


def test_softreboot_with_terminate_policy_recreates_vmi(simulator, custom):
    vm = objects.make_vm('sr', run_strategy='Always')
    vm['spec']['template']['spec']['domain']['rebootPolicy'] = 'Terminate'
    custom.create_namespaced_custom_object(G, V, 'default', VMS, vm)
    _vm, vmi = wait_running(simulator, custom, 'sr')
    action(custom, 'sr', 'softreboot', plural=VMIS)
    simulator.wait_for(lambda: (get(custom, 'sr', VMIS) or {}).get(
        'metadata', {}).get('uid') not in (None, vmi['metadata']['uid']))
    wait_running(simulator, custom, 'sr')


def test_deleting_a_vm_collects_what_it_owns(simulator, custom, kube_client):
    created = create_vm(custom, 'gc', run_strategy='Always', grace=0)
    wait_running(simulator, custom, 'gc')
    dv = custom.get_namespaced_custom_object(
        'cdi.kubevirt.io', 'v1beta1', 'default', 'datavolumes', 'gc-root')
    assert dv['metadata']['ownerReferences'][0]['uid'] == \
        created['metadata']['uid']
    core = client.CoreV1Api(kube_client)
    assert core.read_namespaced_persistent_volume_claim('gc-root', 'default')
    custom.delete_namespaced_custom_object(G, V, 'default', VMS, 'gc')

    def gone():
        pvcs = core.list_namespaced_persistent_volume_claim('default').items
        dvs = custom.list_namespaced_custom_object(
            'cdi.kubevirt.io', 'v1beta1', 'default', 'datavolumes')['items']
        return (get(custom, 'gc', VMIS) is None and not pvcs and not dvs)
    simulator.wait_for(gone)
