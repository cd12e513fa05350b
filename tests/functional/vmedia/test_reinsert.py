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

"""Eject then insert at once: the new tray is read back every time.

Each new image gets a DataVolume of a new name (the tray's next
generation), and the old DataVolume's DELETED watch event can arrive
after the create. The write overlay must
survive that older event (client-go's MutationCache keeps a mutation
until the cache holds that resourceVersion or a newer one).
"""

import pytest
from tests import backend
from tests.functional.emulator import harness


ROUNDS = 30
#: Tiny delays: the import ends while the loop runs.
TINY = {'Scheduling': 0.01, 'Scheduled': 0.01, 'Running': 0.01,
        'ImportScheduled': 0.01, 'ImportInProgress': 0.02}
#: DataVolume watch events arrive this late, so the old DataVolume's
#: DELETED event lands right after the new one was written.
LAG = 0.1
#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=4, stage_delays=TINY)
    simulator.faults.event_delay(LAG, path='datavolumes$',
                                 query={'watch': None}, times=None)
    try:
        yield simulator
    finally:
        simulator.stop()


def test_eject_then_insert_reads_the_new_tray(machine, images):
    image = images.add('reinsert.iso')
    assert machine.insert(image).status_code == 204
    failures = []
    for round_ in range(ROUNDS):
        assert machine.eject().status_code == 204
        answer = machine.insert(image)
        if answer.status_code != 204:
            failures.append((round_, answer.status_code, answer.text))
            continue
        # Read through the window in which the late DELETED arrives.
        for _poll in range(int(2 * LAG / 0.01)):
            shown = machine.media()['Image']
            if shown != image:
                failures.append((round_, 'GET', shown))
                break
            harness.time.sleep(0.01)
    assert not failures, failures
    assert machine.eject().status_code == 204
