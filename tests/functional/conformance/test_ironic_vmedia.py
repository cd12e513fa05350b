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

"""Ironic's virtual-media boot through sushy, call for call.

As ``ironic/drivers/modules/redfish/boot.py`` does it with sushy 5.x: the
System by VM name (307), ``system.virtual_media`` members picked by
``MediaTypes``, ``eject_media`` of what is inserted, ``insert_media(url)``
(which POSTs only ``{"Image": url}``), boot device Cd once, power on with
Ironic's retry of the 409 ``ActionParameterValueConflict`` answered while
the image imports, then eject. The Redfish requests and Kubernetes API
calls of each step are in doc/source/conformance.rst.
"""

import collections
import time

import pytest
import sushy
from tests import backend
from tests.functional.conformance import conftest
from tests.functional.conformance import test_ironic_flows as flows
from tests.functional.emulator import harness
from tests.functional.vmedia.conftest import images  # noqa: F401

from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

#: The import lasts 2 s, so the power-on right after the insert is
#: refused at least once.
DELAYS = dict(conftest.DELAYS, ImportScheduled=0.1, ImportInProgress=2.0)
CONFLICT = 'ActionParameterValueConflict'
#: Ironic: [redfish] power_on_conflict_retry_attempts = 6, 10 s apart;
#: here more attempts, a short interval.
RETRY_ATTEMPTS = 40
RETRY_INTERVAL = 0.2
CD = sushy.VIRTUAL_MEDIA_CD
DVD = sushy.VIRTUAL_MEDIA_DVD
CDROM = media.disk_name('Cd')


@pytest.fixture(scope='module')
def sim():
    running = backend.start(vms=4, stage_delays=DELAYS)
    try:
        yield running
    finally:
        running.stop()


class Recorder:
    """Redfish requests sushy sends and API calls, per named step.

    A step's API calls are those logged since the previous step ended: a
    background write (the one-time boot's restore) answered between two
    steps counts in the next one, not in neither.
    """

    def __init__(self, sim, ironic):
        self.sim = sim
        sim.request_log.clear()
        self._seen = 0
        self.sent = []
        self.steps = collections.OrderedDict()
        connector = ironic._conn
        original = connector._op

        def op(method, path='', data=None, *args, **kwargs):
            self.sent.append((method, path, data))
            return original(method, path, data, *args, **kwargs)
        connector._op = op

    def __call__(self, name, action):
        self.sent.clear()
        result = action()
        redfish = collections.Counter(method for method, _p, _d in self.sent)
        logged = conftest.api_calls(self.sim)
        calls = ['%s %s' % (e['method'], e['resource'])
                 for e in logged[self._seen:]]
        self._seen = len(logged)
        self.steps[name] = (dict(redfish), collections.Counter(calls))
        return result


def cd_members(system):
    """Ironic's choice: members whose MediaTypes have CD (or DVD)."""
    return [v for v in system.virtual_media.get_members()
            if CD in v.media_types or DVD in v.media_types]


def eject_vmedia(ironic, path):
    """Ironic's _eject_vmedia: eject each CD that reads as inserted."""
    ejected = False
    for v_media in cd_members(ironic.get_system(path)):
        if v_media.inserted:
            v_media.eject_media()
            ejected = True
    return ejected


def insert_vmedia(ironic, path, url):
    """Ironic's _insert_vmedia_in_resource on the System's collection."""
    for v_media in cd_members(ironic.get_system(path)):
        if v_media.inserted:
            if v_media.image == url:
                return v_media
            continue
        v_media.insert_media(url, inserted=True, write_protected=True)
        return v_media
    raise AssertionError('no CD virtual media to insert into')


def power_on(ironic, path):
    """Reset On, retrying the conflict answered while the image imports.

    :returns: how many attempts were refused.
    """
    for refused in range(RETRY_ATTEMPTS):
        try:
            ironic.get_system(path).reset_system(sushy.RESET_ON)
            return refused
        except sushy.exceptions.HTTPError as exc:
            if exc.status_code != 409 or CONFLICT not in str(exc):
                raise
        time.sleep(RETRY_INTERVAL)
        ironic.get_system(path)   # the conductor re-reads the node
    raise AssertionError('power on refused %d times' % RETRY_ATTEMPTS)


def _spec_disks(sim, machine):
    return [d['name'] for d in flows._devices(sim, machine)['disks']]


def _dv(sim, machine):
    vm = harness.vm(sim, machine.name)
    return sim.store.try_get(cdi.DV_RT, 'default',
                             media.tray_datavolume_name(vm, 'Cd'))


def test_ironic_virtual_media_boot(sim, ironic, machine, images):  # noqa
    path = flows._path(machine)
    old = images.add('old-%s.iso' % machine.name)
    url = images.add('deploy-%s.iso' % machine.name)
    # A previous deploy left its image inserted.
    insert_vmedia(ironic, path, old)
    harness.wait_until(
        lambda: cd_members(ironic.get_system(path))[0].inserted, 20, 0.1,
        'old image inserted')
    rec = Recorder(sim, ironic)

    cds = rec('get_system by name, VirtualMedia members',
              lambda: cd_members(ironic.get_system(path)))
    assert [(v.identity, v.inserted, v.image) for v in cds] == [
        ('Cd', True, old)]
    assert {CD, DVD} <= set(cds[0].media_types)
    assert 307 not in [m for m, _p, _d in rec.sent]

    assert rec('eject_media (inserted)',
               lambda: eject_vmedia(ironic, path)) is True
    assert CDROM not in _spec_disks(sim, machine)
    assert [(p, d) for m, p, d in rec.sent if m == 'POST'] == [
        (machine.path + '/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia',
         None)]

    rec('insert_media(url)', lambda: insert_vmedia(ironic, path, url))
    posts = [(p, d) for m, p, d in rec.sent if m == 'POST']
    assert posts == [(machine.path + '/VirtualMedia/Cd/Actions/'
                      'VirtualMedia.InsertMedia', {'Image': url})]
    state = cd_members(ironic.get_system(path))[0]
    assert (state.image, state.inserted) == (url, False)   # importing
    assert _spec_disks(sim, machine) == ['root', CDROM]

    rec('set_boot_device Cd once',
        lambda: flows.set_boot_device(ironic, machine,
                                      sushy.BOOT_SOURCE_TARGET_CD, False))
    assert flows._boot(ironic, machine) == (sushy.BOOT_SOURCE_TARGET_CD,
                                            flows.ONCE)

    refused = rec('reset On, retried while importing',
                  lambda: power_on(ironic, path))
    assert refused >= 1
    assert _dv(sim, machine)['status']['phase'] == 'Succeeded'

    def booted():
        harness.wait_until(
            lambda: ironic.get_system(path).power_state == flows.ON, 20,
            0.1, 'power On')
        # The one-time boot is consumed: Hdd again, override Disabled.
        harness.wait_until(
            lambda: flows._boot(ironic, machine) == (
                sushy.BOOT_SOURCE_TARGET_HDD, flows.DISABLED),
            20, 0.1, 'one-time boot consumed')

    rec('poll power_state until On, boot order restored', booted)
    vmi = harness.vmi(sim, machine.name)
    cdrom = [d for d in vmi['spec']['domain']['devices']['disks']
             if d['name'] == CDROM]
    assert cdrom and cdrom[0]['bootOrder'] == 1
    assert cd_members(ironic.get_system(path))[0].inserted is True

    assert rec('eject_media', lambda: eject_vmedia(ironic, path)) is True
    assert CDROM not in _spec_disks(sim, machine)
    harness.wait_until(lambda: _dv(sim, machine) is None, 10, 0.05,
                       'DataVolume deleted')
    assert eject_vmedia(ironic, path) is False   # nothing left

    for name, (redfish, calls) in rec.steps.items():
        print('%-45s %-22s %s' % (name, redfish, dict(calls)))
    steps = {name: calls for name, (_r, calls) in rec.steps.items()}
    assert steps['get_system by name, VirtualMedia members'] == {}
    assert steps['eject_media (inserted)'] == {
        'PATCH virtualmachines': 1, 'DELETE datavolumes': 1}
    assert steps['insert_media(url)'] == {
        'POST datavolumes': 1, 'PATCH virtualmachines': 1}
    assert steps['set_boot_device Cd once'] == {'PATCH virtualmachines': 1}
    # The one-time boot is restored by the emulator's own guarded patch
    # when the VMI appears, during either step (a conflict with a VM
    # status update re-reads the VM and patches again).
    # Each power-on attempt reads the VM and its DataVolume live (a
    # replica's cache may lag another's InsertMedia), refused or not.
    attempts = refused + 1
    power = (steps['reset On, retried while importing']
             + steps['poll power_state until On, boot order restored'])
    assert power.pop('PUT virtualmachines/start') == 1
    assert power.pop('GET datavolumes') == attempts
    # An attempt whose live VM is newer than the cached one (the watch lags
    # a status write on a loaded machine) makes its plan again from the
    # live VM and VMI: 1 more GET.
    assert 0 <= power.pop('GET virtualmachineinstances', 0) <= attempts
    assert set(power) <= {'PATCH virtualmachines', 'GET virtualmachines'}
    assert power['PATCH virtualmachines'] >= 1
    # Beyond those, 1 GET per guarded patch that conflicted.
    assert 0 <= power['GET virtualmachines'] - attempts <= \
        power['PATCH virtualmachines']
    assert steps['eject_media'] == {
        'PATCH virtualmachines': 1, 'DELETE datavolumes': 1}
