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

"""Kubernetes API calls per Redfish operation, from the request log.

Each operation runs on a settled system (the previous one has taken
effect) with the simulator's request log cleared first; the calls are
what the emulator sent while answering that one Redfish request (watch
streams excluded). ``EXPECTED`` is the table in doc/source/conformance.rst.
"""

import requests
import sushy
from tests.functional.conformance import conftest
from tests.functional.conformance import test_ironic_flows as flows
from tests.functional.emulator import harness

from sushy_kubevirt.accounts import recorder

START = 'PUT virtualmachines/start'
STOP = 'PUT virtualmachines/stop'
RESTART = 'PUT virtualmachines/restart'
PATCH = 'PATCH virtualmachines'
#: The live read confirming a no-op, a start or the stop of an Always VM
#: (a lagging cache); and the one after a start, stop or restart, which
#: gives the cache the VM virt-api wrote (read-your-writes).
GET = 'GET virtualmachines'

#: operation -> Kubernetes API calls (method, resource[/subresource]).
EXPECTED = {
    'GET System (warm)': [],
    'GET System by VM name (307 + GET)': [],
    'power poll (4 x GET System + GET SecureBoot)': [],
    'GET Systems': [],
    'GET Processors, EthernetInterfaces, SimpleStorage, BIOS': [],
    'PATCH Boot target, Continuous': [PATCH],
    'PATCH Boot target, unchanged': [],
    'PATCH Boot target, Once': [PATCH],
    'Ironic set_boot_device persistent (sushy, by name)': [PATCH],
    'Ironic set_boot_device once (sushy, by name)': [PATCH],
    'Ironic set_boot_mode UEFI (sushy, by name)': [PATCH],
    'PATCH BootSourceOverrideMode': [PATCH],
    'PATCH SecureBoot': [PATCH],
    'PATCH BIOS Settings': [PATCH],
    # The BIOS Settings PATCH above applies at this boot: one PATCH makes
    # it current just before the start (kubevirt.bios.boot_ops).
    'Reset On (Off)': [GET, PATCH, START, GET],
    'Reset On (On)': [GET],
    'Reset ForceOn (On)': [GET],
    'Reset ForceRestart (On)': [GET, RESTART, GET],
    'Reset GracefulRestart (On)': [GET, RESTART, GET],
    'Reset GracefulShutdown (On)': [GET, STOP, GET],
    'Reset ForceOff (Off)': [GET],
    'Reset GracefulShutdown (Off)': [GET],
    'Reset PushPowerButton (Off)': [GET, START, GET],
    'Reset ForceOff (On)': [GET, STOP, GET],
    'Reset ForceRestart (Off)': [GET, START, GET],
    'Reset Nmi (400)': [],
}


def _labels(sim):
    return ['%s %s' % (e['method'], e['resource'])
            for e in conftest.api_calls(sim)]


class Meter:
    """Runs Redfish requests and records the API calls of each."""

    def __init__(self, sim, emulator, machine):
        self.sim = sim
        self.url = emulator.url
        self.system = emulator.url + machine.path
        self.measured = {}

    def __call__(self, name, send, status=range(200, 300)):
        self.sim.request_log.clear()
        response = send()
        if response is not None:
            assert response.status_code in status, (name, response.text)
        self.measured[name] = _labels(self.sim)

    def get(self, path=''):
        return lambda: requests.get(self.system + path, timeout=30)

    def patch(self, body, path=''):
        return lambda: requests.patch(self.system + path, json=body,
                                      timeout=30)

    def reset(self, reset_type):
        return lambda: requests.post(
            self.system + '/Actions/ComputerSystem.Reset',
            json={'ResetType': reset_type}, timeout=30)


def _reads(meter, ironic, machine):
    meter.get()()
    # sushy's login is recorded in the security log after its answer,
    # by the log's own thread: not a call of the requests measured here.
    harness.wait_until(lambda: recorder.held() == 0, 30, 0.02,
                       'the security log written')
    meter('GET System (warm)', meter.get())
    meter('GET System by VM name (307 + GET)', lambda: requests.get(
        meter.url + flows._path(machine), timeout=30))
    meter('power poll (4 x GET System + GET SecureBoot)',
          lambda: flows.power_poll(ironic, machine) and None)
    meter('GET Systems', lambda: requests.get(
        meter.url + '/redfish/v1/Systems', timeout=30))

    def inventory():
        for sub in ('/Processors', '/EthernetInterfaces', '/SimpleStorage',
                    '/BIOS'):
            assert meter.get(sub)().status_code == 200, sub
    meter('GET Processors, EthernetInterfaces, SimpleStorage, BIOS',
          inventory)


def _writes(meter):
    pxe = {'Boot': {'BootSourceOverrideTarget': 'Pxe',
                    'BootSourceOverrideEnabled': 'Continuous'}}
    meter('PATCH Boot target, Continuous', meter.patch(pxe))
    meter('PATCH Boot target, unchanged', meter.patch(pxe))
    meter('PATCH BootSourceOverrideMode', meter.patch(
        {'Boot': {'BootSourceOverrideMode': 'UEFI'}}))
    meter('PATCH SecureBoot', meter.patch({'SecureBootEnable': True},
                                          '/SecureBoot'))
    meter('PATCH BIOS Settings', meter.patch(
        {'Attributes': {'ProcTurboMode': 'Disabled'}}, '/BIOS/Settings'))


def _power(meter, ironic, machine, sim):
    def wait(state):
        harness.wait_until(lambda: ironic.get_system(
            flows._path(machine)).power_state == state, 20, 0.1, state)

    def restarted(name, reset_type):
        before = flows._vmi_uid(sim, machine)
        meter(name, meter.reset(reset_type))
        harness.wait_until(
            lambda: flows._vmi_uid(sim, machine) not in (None, before),
            20, 0.1, 'a new VMI')
        wait(flows.ON)

    meter('Reset On (Off)', meter.reset('On'))
    wait(flows.ON)
    meter('Reset On (On)', meter.reset('On'))
    meter('Reset ForceOn (On)', meter.reset('ForceOn'))
    restarted('Reset ForceRestart (On)', 'ForceRestart')
    restarted('Reset GracefulRestart (On)', 'GracefulRestart')
    meter('Reset GracefulShutdown (On)', meter.reset('GracefulShutdown'))
    wait(flows.OFF)
    meter('Reset ForceOff (Off)', meter.reset('ForceOff'))
    meter('Reset GracefulShutdown (Off)', meter.reset('GracefulShutdown'))
    meter('Reset PushPowerButton (Off)', meter.reset('PushPowerButton'))
    wait(flows.ON)
    meter('Reset ForceOff (On)', meter.reset('ForceOff'))
    wait(flows.OFF)
    meter('Reset ForceRestart (Off)', meter.reset('ForceRestart'))
    wait(flows.ON)
    meter('Reset Nmi (400)', meter.reset('Nmi'), status=(400,))
    flows.set_power(ironic, machine, sushy.RESET_FORCE_OFF, flows.OFF)


def _ironic_boot(meter, ironic, machine):
    def sushy_call(call):
        return lambda: call(ironic.get_system(flows._path(machine)))

    meter('PATCH Boot target, Once', meter.patch(
        {'Boot': {'BootSourceOverrideTarget': 'Pxe',
                  'BootSourceOverrideEnabled': 'Once'}}))
    meter('Ironic set_boot_device persistent (sushy, by name)',
          lambda: flows.set_boot_device(
              ironic, machine, sushy.BOOT_SOURCE_TARGET_HDD, True))
    meter('Ironic set_boot_device once (sushy, by name)',
          lambda: flows.set_boot_device(
              ironic, machine, sushy.BOOT_SOURCE_TARGET_PXE, False))
    meter('Ironic set_boot_mode UEFI (sushy, by name)',
          sushy_call(lambda system: system.set_system_boot_options(
              mode=sushy.BOOT_SOURCE_MODE_UEFI)))
    assert flows._boot(ironic, machine) == (
        sushy.BOOT_SOURCE_TARGET_PXE, flows.ONCE)


def test_api_calls_per_redfish_operation(sim, emulator, ironic, machines):
    machine, other = machines(), machines()
    meter = Meter(sim, emulator, machine)
    _reads(meter, ironic, machine)
    _writes(meter)
    _power(meter, ironic, machine, sim)
    meter.system = emulator.url + other.path
    _ironic_boot(meter, ironic, other)
    print('\n'.join('%-58s %s' % (name, ', '.join(calls) or '0')
                    for name, calls in meter.measured.items()))
    assert meter.measured == EXPECTED
