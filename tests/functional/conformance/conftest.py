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

"""Conformance: DMTF validators and Ironic's call sequences.

Reuses the emulator harness of tests/functional/emulator (in-process
emulator with the kubevirt drivers on a simulator); the simulator here
shuts guests down quickly so soft power-off completes within a test.
"""

import pytest
import sushy
from tests import backend
from tests.functional.emulator.conftest import config_file  # noqa: F401
from tests.functional.emulator.conftest import emulator  # noqa: F401
from tests.functional.emulator.conftest import machine  # noqa: F401
from tests.functional.emulator.conftest import machines  # noqa: F401
from tests.functional.emulator import harness


VMS = 12
#: Fast VMI stages; a guest honours an ACPI shutdown within 0.3 s.
DELAYS = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1,
          'Shutdown': 0.3}
#: Seconds a logout may take to reach another process: its watch's
#: delivery delay, milliseconds, here with a wide margin for loaded CI.
LOGOUT_BOUND = 5.0


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'validator: runs a DMTF Redfish validator '
        '(deselect with -m "not validator")')


def api_calls(sim):
    """The API calls logged so far, once in-flight entries are recorded.

    The simulator records a request after sending its response, so a
    client can see the answer first: a sentinel ``GET /version`` sent
    afterwards and seen in the log bounds that window. The orphan
    collector's lists of the tray Secrets are no step's
    (:func:`harness.api_calls` leaves them out). Nor is a list of Events:
    Events are only ever read from their cache, so a list is their
    informer's relist (seen once in CI, inside a warm GET).
    """
    backend.log_complete(sim)
    return [e for e in harness.api_calls(sim) if e['path'] != '/version'
            and not (e.get('verb') == 'list'
                     and e.get('resource') == 'events')]


def simulator(vms):
    return backend.start(vms=vms, stage_delays=DELAYS)


def sim_fixture(vms):
    """A module-scoped ``sim`` fixture with ``vms`` VMs."""
    @pytest.fixture(scope='module')
    def sim():
        running = simulator(vms)
        try:
            yield running
        finally:
            running.stop()
    return sim


@pytest.fixture(scope='module')
def sim():
    running = simulator(VMS)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def ironic(emulator):  # noqa: F811
    """sushy as Ironic builds it: session auth falling back to Basic.

    The session is closed (DELETE) when the test ends: left to sushy's
    ``__del__``, the garbage collector could run that request inside a
    thread of this process's simulator while it holds its store lock.
    """
    auth = sushy.auth.SessionOrBasicAuth(username='ironic',
                                         password='ironic')
    with auth:
        yield sushy.Sushy(emulator.url + '/redfish/v1/', auth=auth,
                          verify=False, server_side_retries=0)
