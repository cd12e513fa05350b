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

"""Simulator + in-process emulator + a loopback image server.

The emulator harness comes from tests/functional/emulator; this adds an
HTTP server serving small ISO-like files and VirtualMedia helpers.
"""

import functools
import http.server
import itertools
import threading

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

VMS = 32
#: VM stages fast; the import slow enough to be seen in progress.
DELAYS = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1,
          'ImportScheduled': 0.2, 'ImportInProgress': 1.0}
NOT_FOUND = '/missing.iso'
WRITES = ('create', 'update', 'patch', 'delete', 'start', 'stop', 'restart')


def iso_bytes(label, size=64 * 1024):
    """A small file with an ISO 9660 primary volume descriptor."""
    data = bytearray(size)
    data[0x8000:0x8006] = b'\x01CD001'
    data[0x8028:0x8028 + len(label)] = label.encode()
    return bytes(data)


class _Quiet(http.server.SimpleHTTPRequestHandler):

    def log_message(self, *args):
        pass


class ImageServer:
    """Serves ``files`` (name -> bytes) on 127.0.0.1; 404 for the rest.

    With ``context`` (a server ``ssl.SSLContext``), over https.
    """

    def __init__(self, root, context=None):
        self.root = root
        self.scheme = 'https' if context else 'http'
        handler = functools.partial(_Quiet, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      handler)
        if context:
            self.server.socket = context.wrap_socket(self.server.socket,
                                                     server_side=True)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def add(self, name, label=None):
        (self.root / name).write_bytes(iso_bytes(label or name))
        return self.url(name)

    def url(self, name):
        return '%s://127.0.0.1:%d/%s' % (self.scheme,
                                         self.server.server_port,
                                         name.lstrip('/'))

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


class Machine:
    """One seeded VM: Redfish paths and store accessors."""

    def __init__(self, sim, base, name):
        self.sim = sim
        self.base = base
        self.name = name
        self.uuid = identity.firmware_uuid(harness.vm(sim, name))
        self.path = '/redfish/v1/Systems/%s' % self.uuid
        self.cd = self.path + '/VirtualMedia/Cd'

    @property
    def dv_name(self):
        """The tray's DataVolume name (each new image gets one).

        The VM's (attached, or of its latest generation) when that
        exists, else the next generation's, which an insert makes.
        """
        vm = self.vm()
        name = media.tray_datavolume_name(vm, 'Cd')
        if media.attached_datavolume(vm, 'Cd') or self.sim.store.try_get(
                cdi.DV_RT, 'default', name) is not None:
            return name
        return media.datavolume_name(
            vm, 'Cd', generations.generation(vm, 'Cd') + 1)

    def url(self, path):
        return self.base + path

    def vm(self):
        return harness.vm(self.sim, self.name)

    def spec(self):
        return self.vm()['spec']

    def dv(self):
        return self.sim.store.try_get(cdi.DV_RT, 'default', self.dv_name)

    def datavolumes(self):
        return [dv for dv in self.sim.store.list(cdi.DV_RT, 'default')[0]
                if dv['metadata']['name'].startswith(self.name + '-vmedia')]

    def insert(self, image, **extra):
        return requests.post(
            self.url(self.cd + '/Actions/VirtualMedia.InsertMedia'),
            json=dict(extra, Image=image), timeout=30)

    def eject(self):
        return requests.post(
            self.url(self.cd + '/Actions/VirtualMedia.EjectMedia'),
            json={}, timeout=30)

    def reset(self, reset_type):
        return requests.post(
            self.url(self.path + '/Actions/ComputerSystem.Reset'),
            json={'ResetType': reset_type}, timeout=30)

    def boot(self, target, enabled=None):
        body = {'BootSourceOverrideTarget': target}
        if enabled:
            body['BootSourceOverrideEnabled'] = enabled
        return requests.patch(self.url(self.path), json={'Boot': body},
                              timeout=30)

    def boot_mode(self, mode):
        return requests.patch(self.url(self.path), json={
            'Boot': {'BootSourceOverrideMode': mode}}, timeout=30)

    def media(self):
        answer = requests.get(self.url(self.cd), timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def wait_media(self, timeout=20.0, **expected):
        """The Cd resource once its (or its Status') fields are ``expected``.

        The emulator reads DataVolumes from its watch cache, so it sees a
        phase the simulator reached a moment later.
        """
        def matches():
            state = self.media()
            return state if all(
                state.get(k, state['Status'].get(k)) == v
                for k, v in expected.items()) else None
        return harness.wait_until(matches, timeout, 0.02,
                                  'VirtualMedia %s' % (expected,))

    def wait_phase(self, *phases, timeout=20.0):
        return harness.wait_until(
            lambda: (self.dv() or {}).get('status', {}).get('phase')
            in phases and self.dv(), timeout, 0.02,
            'DataVolume phase in %s' % (phases,))


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=VMS, stage_delays=DELAYS)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def images(tmp_path_factory):
    server = ImageServer(tmp_path_factory.mktemp('images'))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope='module')
def emulator_settings():
    """Extra emulator config keys (a module may override this)."""
    return {}


@pytest.fixture(scope='module')
def emulator(sim, tmp_path_factory, emulator_settings):
    tmp = tmp_path_factory.mktemp('emulator')
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    settings = dict({'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT': 2},
                    **emulator_settings)
    config = harness.write_config(tmp / 'emulator.conf', kubeconfig,
                                  **settings)
    with harness.InProcess(config) as server:
        yield server.wait_synced()


@pytest.fixture(scope='module')
def machines(sim, emulator):
    names = ('vm-%05d' % i for i in itertools.count())
    return lambda: Machine(sim, emulator.url, next(names))


@pytest.fixture
def machine(machines):
    return machines()


def writes(sim, **filters):
    """Mutating Kubernetes API calls in the simulator's request log."""
    return [e for e in harness.api_calls(sim, **filters)
            if e.get('verb') in WRITES]
