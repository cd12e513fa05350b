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

"""A simulator with spare VMs, and the emulator served in-process."""

import itertools

import pytest
import sushy
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

VMS = 24
FAST = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1}


class Machine:
    """A seeded VM handed to one test: ``name``, ``uuid``, ``url``."""

    def __init__(self, sim, name):
        self.name = name
        self.uuid = identity.firmware_uuid(harness.vm(sim, name))
        self.path = '/redfish/v1/Systems/%s' % self.uuid


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=VMS, stage_delays=FAST)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def machines(sim):
    names = ('vm-%05d' % i for i in itertools.count())
    return lambda: Machine(sim, next(names))


@pytest.fixture
def machine(machines):
    return machines()


@pytest.fixture(scope='module')
def config_file(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('emulator')
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    return harness.write_config(tmp / 'emulator.conf', kubeconfig)


@pytest.fixture(scope='module')
def emulator(config_file):
    with harness.InProcess(config_file) as server:
        yield server.wait_synced()


@pytest.fixture
def redfish(emulator):
    """A sushy client, the Redfish library Ironic uses."""
    return sushy.Sushy(emulator.url + '/redfish/v1/',
                       auth=harness.NoAuth(), server_side_retries=0)
