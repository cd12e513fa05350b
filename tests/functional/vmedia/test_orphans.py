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

"""An InsertMedia that fails after creating something leaves nothing.

The API server fails between the InsertMedia's writes (the DataVolume is
created, the VM patch that attaches it is refused; or the credentials
Secret is created, the DataVolume refused) and refuses the clean-up too,
as a restarting server does. The orphan collector deletes the unused
DataVolume and Secret once the server answers again, and never one an
InsertMedia is about to attach.
"""

import time

import pytest
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

#: Seconds an unused tray object is left, seconds between two lists of
#: the tray Secrets (the emulator settings).
GRACE, SWEEP = 1.0, 1.0
SECRETS = ('', 'secrets')


@pytest.fixture(scope='module')
def emulator_settings():
    return {'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_ORPHAN_GRACE': GRACE,
            'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_ORPHAN_SWEEP': SWEEP}


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


def _lists(sim, since):
    """The lists of Secrets started after ``since``."""
    return sim.request_log.count(verb='list', resource='secrets',
                                 started=lambda t: t > since)


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


def test_a_secret_left_before_its_datavolume_is_deleted(
        machine, images, sim):
    image = images.add('secret-%s.iso' % machine.name)
    # The DataVolume create and the clean-up are refused; the Secret was
    # created just before.
    sim.faults.status(503, method='POST', path='datavolumes$')
    sim.faults.status(503, method='DELETE', path='secrets/', times=None)
    try:
        answer = machine.insert(image, UserName='u', Password='p')
        assert answer.status_code == 503, answer.text
        assert secret(machine) is not None and machine.dv() is None
    finally:
        sim.faults.clear()
    harness.wait_until(lambda: gone(machine), timeout=GRACE + SWEEP + 30,
                       what='the unused Secret deleted')
    assert machine.insert(image, UserName='u',
                          Password='p').status_code == 204
    machine.wait_media(Inserted=True, timeout=30)
    assert uses(machine) and secret(machine) is not None
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


@pytest.mark.parametrize('credentials', [False, True],
                         ids=['anonymous', 'credentials'])
def test_an_inserted_false_tray_is_not_an_orphan(machine, machines, images,
                                                 sim, credentials):
    """Imported but detached on purpose: it stays, with its Secret."""
    image = images.add('kept-%s.iso' % machine.name)
    extra = {'UserName': 'u', 'Password': 'p'} if credentials else {}
    assert machine.insert(image, Inserted=False,
                          **extra).status_code == 204
    created = machine.dv()['metadata']['uid']
    kept, since = secret(machine), time.time()
    collected_since(machines, images, sim)
    if credentials:
        # Lists of the Secrets after it: judged, and kept past its grace.
        harness.wait_until(lambda: _lists(sim, since) >= 3, 3 * SWEEP + 30,
                           what='the tray Secrets listed three times')
        assert secret(machine)['metadata']['uid'] == \
            kept['metadata']['uid']
    assert machine.dv()['metadata']['uid'] == created
    assert not uses(machine)
