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

"""An emulator killed in the middle of an InsertMedia leaves nothing.

The emulator runs as a ``sushy-kubevirt-emulator`` subprocess. The
simulator holds one write of an InsertMedia (the VM patch attaching the
DataVolume, or the DataVolume create after the credentials Secret) and
then refuses it, so the process is killed (SIGKILL) exactly between two
writes, with the first one made. A new process on the same port reads
the tray empty at once, deletes the DataVolume and Secret left within
the orphan grace, and leaves the VM's spec as it was.
"""

import os
import signal
import threading

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

#: Seconds an unused tray object is left (the emulator setting).
GRACE = 2.0
#: Seconds the held write waits before it is refused.
HOLD = 10.0
SECRETS = ('', 'secrets')
#: (window, with credentials): the write held, the process killed there.
CASES = [('attach', False), ('attach', True), ('datavolume', True)]
#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=len(CASES), stage_delays=conftest.DELAYS)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def images(tmp_path_factory):
    server = conftest.ImageServer(tmp_path_factory.mktemp('images'))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope='module')
def names():
    return iter('vm-%05d' % i for i in range(len(CASES)))


def _start(config, tmp_path, port):
    os.makedirs(tmp_path, exist_ok=True)
    return harness.emulator_process('sushy-kubevirt-emulator', config,
                                    tmp_path, port).start()


def _kill(process):
    os.killpg(process.proc.pid, signal.SIGKILL)
    process.proc.wait(15)


def _hold(sim, window, name):
    """Hold the write of ``window`` HOLD seconds, then refuse it."""
    method, path = {'attach': ('PATCH', '/virtualmachines/%s$' % name),
                    'datavolume': ('POST', '/datavolumes$')}[window]
    sim.faults.status(503, method=method, path=path)
    return sim.faults.latency(HOLD, method=method, path=path, times=1)


@pytest.mark.parametrize('window, credentials', CASES,
                         ids=['%s-%s' % (w, 'credentials' if c else
                                         'anonymous') for w, c in CASES])
def test_a_killed_insert_leaves_nothing(sim, images, names, tmp_path,
                                        window, credentials):
    name = next(names)
    kubeconfig = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    config = harness.write_config(
        tmp_path / 'emulator.conf', kubeconfig,
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT=2,
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_ORPHAN_GRACE=GRACE)
    port = harness.free_port()
    vm = harness.vm(sim, name)
    cd = '/redfish/v1/Systems/%s/VirtualMedia/Cd' % \
        identity.firmware_uuid(vm)
    # The insert makes the tray's next generation.
    dv_name = media.datavolume_name(vm, 'Cd',
                                    generations.generation(vm, 'Cd') + 1)

    def left():
        store = sim.store
        return [kind for kind, rt, obj in (
            ('DataVolume', cdi.DV_RT, dv_name),
            ('Secret', store.resource(*SECRETS), media.secret_name(dv_name)))
            if store.try_get(rt, 'default', obj) is not None]

    body = {'Image': images.add('killed-%s.iso' % name)}
    if credentials:
        body.update(UserName='u', Password='p')
    first = _start(config, tmp_path / 'first', port)
    second = None
    try:
        url = first.wait_ready().url
        held = _hold(sim, window, name)
        insert = threading.Thread(target=lambda: _post_quietly(
            url + cd + '/Actions/VirtualMedia.InsertMedia', body),
            daemon=True)
        insert.start()
        harness.wait_until(lambda: held.hits, 20, 0.02, 'the write held')
        made = left()
        assert made == (['DataVolume', 'Secret'][:1 + credentials]
                        if window == 'attach' else ['Secret'])
        _kill(first)
        spec = harness.vm(sim, name)['spec']

        second = _start(config, tmp_path / 'second', port)
        second.wait_ready()
        state = requests.get(url + cd, timeout=30).json()
        assert (state['Image'], state['Inserted']) == (None, False), state
        harness.wait_until(lambda: not left(), GRACE + 30, 0.1,
                           'the orphans of the killed insert deleted')
        assert harness.vm(sim, name)['spec'] == spec
        state = requests.get(url + cd, timeout=30).json()
        assert (state['Image'], state['Inserted']) == (None, False), state

        # Nothing in the way: the same insert now succeeds.
        answer = requests.post(url + cd + '/Actions/VirtualMedia.'
                               'InsertMedia', json=body, timeout=30)
        assert answer.status_code == 204, answer.text
        harness.wait_until(
            lambda: requests.get(url + cd, timeout=30).json()['Inserted'],
            30, 0.1, 'the new insert imported')
        insert.join(HOLD + 30)
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()
        sim.faults.clear()   # on a real control plane: the skip, last


def _post_quietly(url, body):
    """POST; the emulator is killed before it answers."""
    try:
        requests.post(url, json=body, timeout=HOLD + 30)
    except requests.RequestException:
        pass
