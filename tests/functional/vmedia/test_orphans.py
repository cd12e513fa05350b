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

"""An InsertMedia that fails after creating its DataVolume leaves none.

The API server fails between the InsertMedia's two writes (the
DataVolume is created, the VM patch that attaches it is refused) and
refuses the clean-up too, as a restarting server does. The orphan
collector deletes the unused DataVolume (and its Secret) once the server
answers again, and never one an InsertMedia is about to attach.
"""

import pytest
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

#: Seconds an unused tray DataVolume is left (the emulator setting).
GRACE = 1.0
SECRETS = ('', 'secrets')


@pytest.fixture(scope='module')
def emulator_settings():
    return {'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_ORPHAN_GRACE': GRACE}


def uses(machine):
    """Whether the VM's volumes name the tray's DataVolume."""
    volumes = machine.spec()['template']['spec'].get('volumes') or []
    return any((v.get('dataVolume') or {}).get('name') == machine.dv_name
               for v in volumes)


def fenced(machine):
    """The VM's annotation fencing a DataVolume being deleted, if any."""
    return (machine.vm()['metadata'].get('annotations') or {}).get(
        'sushy-kubevirt.io/vmedia-collecting')


def secret(machine):
    rt = machine.sim.store.resource(*SECRETS)
    return machine.sim.store.try_get(rt, 'default',
                                     media.secret_name(machine.dv_name))


def gone(machine):
    return machine.dv() is None and secret(machine) is None


def collected_since(machines, images, sim):
    """Wait until a tray left unused from now on has been deleted.

    The collector scans every DataVolume at once: an orphan first seen
    now is deleted only after every DataVolume older than it has been
    seen unused for the grace too.
    """
    canary = machines()
    body = media.datavolume_body(canary.vm(), 'Cd', images.add(
        'canary-%s.iso' % canary.name))
    sim.store.create(sim.store.resource(cdi.GROUP, 'datavolumes'), body)
    harness.wait_until(lambda: gone(canary), timeout=GRACE + 30,
                       what='the canary orphan deleted')


@pytest.mark.parametrize('credentials', [False, True],
                         ids=['anonymous', 'credentials'])
def test_an_insert_cut_by_an_api_outage_leaves_no_datavolume(
        machine, images, sim, credentials):
    image = images.add('cut-%s.iso' % machine.name)
    extra = {'UserName': 'u', 'Password': 'p'} if credentials else {}
    # The VM patch and the clean-up are refused, as while the API server
    # restarts; the DataVolume was created just before.
    for method, path in (('PATCH', 'virtualmachines/%s$' % machine.name),
                         ('DELETE', 'datavolumes/'), ('DELETE', 'secrets/')):
        sim.faults.status(503, method=method, path=path, times=None)
    try:
        answer = machine.insert(image, **extra)
        assert answer.status_code == 503, answer.text
        assert answer.headers.get('Retry-After')
        assert machine.dv() is not None and not uses(machine)
    finally:
        sim.faults.clear()
    harness.wait_until(lambda: gone(machine), timeout=GRACE + 30,
                       what='the unused DataVolume deleted')
    # Nothing left in the way: the retry inserts, and the media stays.
    assert machine.insert(image, **extra).status_code == 204
    machine.wait_media(Inserted=True, timeout=30)
    assert uses(machine) and machine.dv() is not None
    assert fenced(machine) is None


def test_a_datavolume_about_to_be_attached_is_never_deleted(
        machine, machines, images, sim):
    """The attach is held past the grace: one of the two writers wins.

    Either the InsertMedia attaches (204) and its DataVolume stays, or
    the collector fenced the VM first, the InsertMedia answers 503 and
    nothing is left; never a 204 whose DataVolume is then deleted.
    """
    image = images.add('held-%s.iso' % machine.name)
    sim.faults.latency(GRACE * 4, method='PATCH',
                       path='virtualmachines/%s$' % machine.name, times=1)
    answer = machine.insert(image)
    assert answer.status_code in (204, 503), answer.text
    if answer.status_code == 503:
        harness.wait_until(lambda: gone(machine), timeout=GRACE + 30,
                           what='the fenced DataVolume deleted')
        assert not uses(machine)
        answer = machine.insert(image)
        assert answer.status_code == 204, answer.text
    machine.wait_media(Inserted=True, timeout=30)
    created = machine.dv()['metadata']['uid']
    collected_since(machines, images, sim)
    assert machine.dv()['metadata']['uid'] == created
    assert uses(machine) and fenced(machine) is None
    assert machine.media()['Inserted'] is True


def test_an_inserted_false_tray_is_not_an_orphan(machine, machines, images,
                                                 sim):
    """Imported but detached on purpose: it stays."""
    image = images.add('kept-%s.iso' % machine.name)
    assert machine.insert(image, Inserted=False).status_code == 204
    created = machine.dv()['metadata']['uid']
    collected_since(machines, images, sim)
    assert machine.dv()['metadata']['uid'] == created
    assert not uses(machine)
