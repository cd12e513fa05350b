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

"""Events of virtual media, boot overrides and systems added or removed."""

import pytest
import requests
from tests.functional.events import conftest as events
from tests.functional.events import receiver as receivermod

from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import objects


@pytest.fixture(scope='module')
def emulator_settings():
    return dict(events.EVENTS)


@pytest.fixture
def receiver(emulator):
    events.wait_leader([emulator.url])
    with receivermod.Receiver() as server:
        answer = events.subscribe(emulator.url, server.url)
        yield server
        requests.delete(emulator.url + answer.headers['Location'],
                        timeout=10)


def _messages(receiver, origin):
    return [e['MessageId'].rpartition('.')[2]
            for e in receiver.matching(origin)]


def test_insert_eject_and_a_failed_import(machine, images, receiver):
    good = images.add('ev-%s.iso' % machine.name)
    assert machine.insert(good).status_code == 204
    machine.wait_media(Inserted=True)
    # Importing (image shown, not inserted), then inserted: 2 changes.
    receiver.wait(lambda r: _messages(r, machine.cd).count(
        'ResourceChanged') >= 2)
    assert machine.eject().status_code == 204
    receiver.wait(lambda r: _messages(r, machine.cd).count(
        'ResourceChanged') >= 3)
    missing = images.url('never-%s.iso' % machine.name)
    assert machine.insert(missing).status_code == 204
    errors = receiver.wait(lambda r: r.matching(
        machine.cd, 'ResourceErrorsDetected'))
    assert errors[0]['MessageArgs'][0] == 'Image'
    assert '404' in errors[0]['MessageArgs'][1]
    assert errors[0]['MessageSeverity'] == 'Warning'
    assert 'ResourceErrorsDetected' not in _messages(receiver, machine.path)


def test_boot_override_change(machine, receiver):
    assert machine.boot('Pxe', 'Continuous').status_code == 204
    receiver.wait(lambda r: r.matching(machine.path, 'ResourceChanged'))
    assert machine.boot('Pxe', 'Continuous').status_code == 204  # no-op
    assert machine.boot('Hdd', 'Continuous').status_code == 204
    receiver.wait(lambda r: len(r.matching(
        machine.path, 'ResourceChanged')) == 2)
    assert _messages(receiver, machine.path) == ['ResourceChanged'] * 2


def test_system_added_and_removed(sim, receiver):
    vm = objects.make_vm('ev-added')
    rt = sim.store.resource('kubevirt.io', 'virtualmachines')
    sim.store.create(rt, vm)
    path = '/redfish/v1/Systems/' + identity.firmware_uuid(
        sim.store.get(rt, 'default', 'ev-added'))
    receiver.wait(lambda r: r.matching(path, 'ResourceCreated'))
    sim.store.delete(rt, 'default', 'ev-added')
    receiver.wait(lambda r: r.matching(path, 'ResourceRemoved'))
    assert _messages(receiver, path) == ['ResourceCreated',
                                         'ResourceRemoved']
