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

"""A simulator, fast EventService settings and event receivers."""

import re

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.events import receiver as receivermod

from sushy_kubevirt.kubevirt import identity

FAST = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1}
EVENTS = {'SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE': 'default',
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_LEASE_DURATION': 3,
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_RENEW_PERIOD': 0.5,
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_RETRY_ATTEMPTS': 2,
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_RETRY_INTERVAL': 0}
SUBSCRIPTIONS = '/redfish/v1/EventService/Subscriptions'
VM_RT = ('kubevirt.io', 'virtualmachines')
_LEADER = re.compile(r'^sushy_kubevirt_events_leader\{candidate="([^"]+)"\} '
                     r'(\d)$', re.M)


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=8, stage_delays=FAST)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def config_file(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('events')
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    return harness.write_config(tmp / 'emulator.conf', kubeconfig, **EVENTS)


@pytest.fixture
def receiver():
    with receivermod.Receiver() as server:
        yield server


def system_path(sim, name):
    return '/redfish/v1/Systems/%s' % identity.firmware_uuid(
        harness.vm(sim, name))


def subscribe(url, destination, **extra):
    answer = requests.post(url + SUBSCRIPTIONS, json=dict(
        Destination=destination, Context='ctx', Protocol='Redfish',
        **extra), timeout=10)
    assert answer.status_code == 201, answer.text
    return answer


def reset(url, path, reset_type):
    answer = requests.post(url + path + '/Actions/ComputerSystem.Reset',
                           json={'ResetType': reset_type}, timeout=10)
    assert answer.status_code == 204, answer.text


def edit_cores(sim, name, cores):
    """Change the VM's CPU cores directly in the simulator (kubectl)."""
    def edit(vm):
        domain = vm['spec']['template']['spec']['domain']
        domain.setdefault('cpu', {})['cores'] = cores
    sim.store.mutate(sim.store.resource(*VM_RT), 'default', name, edit)


def candidates(url):
    """``{candidate: leading}`` from the /metrics of the process at url."""
    text = requests.get(url + '/metrics', timeout=5).text
    return {name: value == '1' for name, value in _LEADER.findall(text)}


def wait_leader(urls, timeout=20.0):
    """The URL of the one process reporting itself the event sender."""
    def leader():
        found = [u for u in urls if any(candidates(u).values())]
        return found if len(found) == 1 else None
    return harness.wait_until(leader, timeout, 0.2, 'one leader')[0]


def lease(sim):
    rt = sim.store.resource('coordination.k8s.io', 'leases')
    return sim.store.try_get(rt, 'default', 'sushy-kubevirt-events')
