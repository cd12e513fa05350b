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

"""Every write the drivers make is valid against the real CRD schemas.

The emulator runs against a simulator that validates VMs, VMIs and
DataVolumes with the KubeVirt and CDI schemas and answers ``Strict`` to
requests that send no ``fieldValidation``: an unknown field is rejected
instead of pruned, a mistyped one is a 422. Each Redfish feature that
writes is exercised; then the simulator's request log must hold no
schema rejection. ``test_the_check_catches_a_bad_write`` shows the check
failing on a deliberately bad write.
"""

from kubernetes import config
import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.simulator import apitools
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import Simulator

VMS = 6
DELAYS = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1,
          'ImportScheduled': 0.1, 'ImportInProgress': 0.2}
WRITES = ('create', 'update', 'patch')
PATCH_NOT_APPLIED = ('the server rejected our request due to an error in '
                     'our request')
TIMEOUT = 30


@pytest.fixture(scope='module')
def sim():
    simulator = Simulator(vms=VMS, stage_delays=DELAYS, time_scale=50,
                          crd_schemas=apitools.crd_schema_dir(),
                          field_validation='Strict')
    with simulator:
        yield simulator


@pytest.fixture(scope='module')
def emulator(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('emulator')
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    conf = harness.write_config(tmp / 'emulator.conf', kubeconfig)
    with harness.InProcess(conf) as server:
        yield server


@pytest.fixture(scope='module')
def images(tmp_path_factory):
    server = conftest.ImageServer(tmp_path_factory.mktemp('images'))
    try:
        yield server
    finally:
        server.stop()


def schema_rejections(sim):
    """Writes the simulator refused for their content, not for a race.

    400 (strict decoding, bad request) and 422 other than a failed
    json-patch ``test`` (the drivers' resourceVersion guard).
    """
    return [(e['method'], e['path'], e['status'], e['error'])
            for e in sim.request_log.entries()
            if e.get('verb') in WRITES and (
                e['status'] == 400 or (e['status'] == 422 and
                                       e['error'] != PATCH_NOT_APPLIED))
            or e.get('warnings')]


class System:
    """One seeded VM seen through the emulator."""

    def __init__(self, emulator, sim, name):
        self.base = emulator.url
        self.sim = sim
        self.name = name
        self.path = '/redfish/v1/Systems/%s' % identity.firmware_uuid(
            harness.vm(sim, name))

    def url(self, path=''):
        return self.base + self.path + path

    def get(self, path=''):
        answer = requests.get(self.url(path), timeout=TIMEOUT)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def patch(self, body, path=''):
        return requests.patch(self.url(path), json=body, timeout=TIMEOUT)

    def post(self, path, body):
        return requests.post(self.url(path), json=body, timeout=TIMEOUT)

    def reset(self, reset_type):
        return self.post('/Actions/ComputerSystem.Reset',
                         {'ResetType': reset_type})

    def power(self):
        return self.get()['PowerState']

    def _cluster_state(self):
        """'On' or 'Off' once the cluster has settled, else None."""
        vm = harness.vm(self.sim, self.name)
        vmi = harness.vmi(self.sim, self.name)
        if vm.get('status', {}).get('stateChangeRequests'):
            return None
        if vm['spec'].get('runStrategy') == 'Halted' and vmi is None:
            return 'Off'
        if vmi and vmi.get('status', {}).get('phase') == 'Running' and \
                not vmi['metadata'].get('deletionTimestamp'):
            return 'On'
        return None

    def settled(self):
        """The power state once no transition is under way.

        The cluster is asked first: the emulator's cache may not have seen
        the last reset yet and still show the state before it.
        """
        def state():
            settled = self._cluster_state()
            return settled and self.power() == settled and settled
        return harness.wait_until(state, TIMEOUT, 0.05,
                                  '%s settled' % self.name)

    def wait_power(self, state):
        harness.wait_until(lambda: self.power() == state, TIMEOUT, 0.05,
                           '%s PowerState %s' % (self.name, state))


def ok(answer):
    assert answer.status_code in (200, 202, 204), (answer.status_code,
                                                   answer.text)


@pytest.fixture(scope='module')
def written(sim, emulator, images):
    """Run every writing feature once; return the write count."""
    sim.request_log.clear()
    boot_system(System(emulator, sim, 'vm-00000'))
    firmware_system(System(emulator, sim, 'vm-00001'))
    power_system(System(emulator, sim, 'vm-00002'))
    media_system(System(emulator, sim, 'vm-00003'), images)
    return [e for e in sim.request_log.entries()
            if e.get('verb') in WRITES + ('delete',)]


def boot_system(system):
    boot = system.get()['Boot']
    targets = boot['BootSourceOverrideTarget@Redfish.AllowableValues']
    for enabled in ('Continuous', 'Once'):
        for target in ('Pxe', 'Hdd'):
            assert target in targets
            ok(system.patch({'Boot': {'BootSourceOverrideTarget': target,
                                      'BootSourceOverrideEnabled': enabled}}))
    ok(system.patch({'Boot': {'BootSourceOverrideEnabled': 'Disabled'}}))
    ok(system.patch({'IndicatorLED': 'Blinking'}))
    ok(system.patch({'IndicatorLED': 'Off'}))


def firmware_system(system):
    for mode in ('Legacy', 'UEFI'):
        ok(system.patch({'Boot': {'BootSourceOverrideMode': mode}}))
    secure_boot = system.get()['SecureBoot']['@odata.id']
    for enable in (True, False):
        ok(requests.patch(system.base + secure_boot,
                          json={'SecureBootEnable': enable},
                          timeout=TIMEOUT))
    bios = requests.get(system.base + system.get()['Bios']['@odata.id'],
                        timeout=TIMEOUT).json()
    settings = bios['@Redfish.Settings']['SettingsObject']['@odata.id']
    ok(requests.patch(system.base + settings, json={'Attributes': {
        'ProcTurboMode': 'Disabled'}}, timeout=TIMEOUT))
    reset = bios['Actions']['#Bios.ResetBios']['target']
    ok(requests.post(system.base + reset, json={}, timeout=TIMEOUT))


def power_system(system):
    actions = system.get()['Actions']['#ComputerSystem.Reset']
    for reset_type in actions['ResetType@Redfish.AllowableValues']:
        on = system.settled() == 'On'
        if reset_type in ('On', 'ForceOn') and on:
            ok(system.reset('ForceOff'))
            system.wait_power('Off')
        elif reset_type not in ('On', 'ForceOn', 'PushPowerButton') \
                and not on:
            ok(system.reset('On'))
            system.wait_power('On')
        answer = system.reset(reset_type)
        if 'ActionParameterNotSupported' not in answer.text:
            ok(answer)  # (an advertised type refused outright writes none)
    system.settled()


def media_system(system, images):
    cd = system.get('/VirtualMedia/Cd')
    insert = cd['Actions']['#VirtualMedia.InsertMedia']['target']
    eject = cd['Actions']['#VirtualMedia.EjectMedia']['target']
    for name in ('first.iso', 'second.iso'):
        ok(requests.post(system.base + insert, json={
            'Image': images.add(name), 'Inserted': True,
            'WriteProtected': True}, timeout=TIMEOUT))
        harness.wait_until(
            lambda: system.get('/VirtualMedia/Cd')['Inserted'], TIMEOUT,
            0.05, 'inserted %s' % name)
        ok(system.patch({'Boot': {'BootSourceOverrideTarget': 'Cd',
                                  'BootSourceOverrideEnabled': 'Once'}}))
        ok(requests.post(system.base + eject, json={}, timeout=TIMEOUT))


def test_the_drivers_wrote(written):
    resources = {(e['verb'], e['resource']) for e in written}
    assert ('patch', 'virtualmachines') in resources
    assert ('create', 'datavolumes') in resources
    assert ('delete', 'datavolumes') in resources
    assert any(r.startswith('virtualmachines/') for _verb, r in resources)


def test_every_driver_write_is_schema_valid(sim, written):
    assert schema_rejections(sim) == []


def test_the_check_catches_a_bad_write(sim, tmp_path):
    """The same check fails on an unknown and on a mistyped field."""
    path = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    api = config.new_client_from_config(config_file=path)
    sim.request_log.clear()
    try:
        for ops in ([{'op': 'add', 'path': '/spec/template/spec/domain/'
                      'devices/disks/0/typo', 'value': 1}],
                    [{'op': 'replace', 'path': '/spec/runStrategy',
                      'value': 1}]):
            status, _headers, _data = apitools.raw(
                api, 'PATCH', '/apis/kubevirt.io/v1/namespaces/default/'
                'virtualmachines/vm-00005', body=ops,
                headers={'Content-Type': 'application/json-patch+json'})
            assert status == 422
    finally:
        api.close()
    assert [r[2] for r in schema_rejections(sim)] == [422, 422]
