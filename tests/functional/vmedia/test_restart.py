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

"""A restarted emulator loses nothing: the tray and boot-once live on the VM.

The emulator runs as a ``sushy-kubevirt-emulator`` subprocess, is killed
(SIGKILL: nothing can be flushed) while an image is being imported, and a
new process is started on the same port against the same cluster. The
image server holds the download halfway until the test releases it, so
the import is in progress for exactly as long as the test needs.
"""

import http.server
import os
import signal
import threading

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media

#: Seconds the held download waits at most (then it completes).
GATE_TIMEOUT = 60.0
CONFLICT = 'ActionParameterValueConflict'
DELAYS = dict(conftest.DELAYS, ImportScheduled=0.05, ImportInProgress=0.2)
KUBEVIRT_API = '/apis/subresources.kubevirt.io/v1/namespaces/default/' \
    'virtualmachines/%s/start'


class HeldImage:
    """Serves one image; its GET stalls halfway until :meth:`release`.

    While held, a byte is sent every half second so the importer's read
    timeout never fires.
    """

    def __init__(self, size=256 * 1024):
        self.data = conftest.iso_bytes('held', size)
        self.released = threading.Event()
        image = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):
                self.send_response(200)
                self.send_header('Content-Length', str(len(image.data)))
                self.end_headers()

            def do_GET(self):
                self.do_HEAD()
                sent = len(image.data) // 2
                self.wfile.write(image.data[:sent])
                while not image.released.wait(0.5) and \
                        sent < len(image.data) - 1:
                    self.wfile.write(image.data[sent:sent + 1])
                    self.wfile.flush()
                    sent += 1
                self.wfile.write(image.data[sent:])

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d/held.iso' % self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def release(self):
        self.released.set()

    def stop(self):
        self.release()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=2, stage_delays=DELAYS)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture
def held():
    image = HeldImage()
    try:
        yield image
    finally:
        image.stop()


class System:
    """Redfish paths of one VM on an emulator URL."""

    def __init__(self, sim, name):
        self.sim = sim
        self.name = name
        self.path = '/redfish/v1/Systems/%s' % identity.firmware_uuid(
            harness.vm(sim, name))
        self.cd = self.path + '/VirtualMedia/Cd'

    def media(self, url):
        answer = requests.get(url + self.cd, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def boot(self, url):
        body = requests.get(url + self.path, timeout=30).json()['Boot']
        return (body['BootSourceOverrideTarget'],
                body['BootSourceOverrideEnabled'])

    def reset(self, url, reset_type):
        return requests.post(url + self.path + '/Actions/ComputerSystem.'
                             'Reset', json={'ResetType': reset_type},
                             timeout=30)

    def patch_boot(self, url, target, enabled):
        answer = requests.patch(url + self.path, json={'Boot': {
            'BootSourceOverrideTarget': target,
            'BootSourceOverrideEnabled': enabled}}, timeout=30)
        assert answer.status_code == 204, answer.text

    def vm(self):
        return harness.vm(self.sim, self.name)

    def dv_phase(self):
        dv = self.sim.store.try_get(conftest.cdi.DV_RT, 'default',
                                    media.tray_datavolume_name(self.vm(),
                                                               'Cd'))
        return (dv or {}).get('status', {}).get('phase')


def _orders(devices):
    return {d['name']: d.get('bootOrder')
            for d in devices['disks'] + devices.get('interfaces', [])}


def _kill(process):
    os.killpg(process.proc.pid, signal.SIGKILL)
    process.proc.wait(15)


def test_restart_loses_nothing(sim, held, tmp_path):
    kubeconfig = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    config = harness.write_config(
        tmp_path / 'emulator.conf', kubeconfig,
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT=2)
    port = harness.free_port()
    first = harness.emulator_process('sushy-kubevirt-emulator', config,
                                     tmp_path, port).start()
    second = None
    try:
        url = first.wait_ready().url
        cd, pxe = System(sim, 'vm-00000'), System(sim, 'vm-00001')

        # Media importing and Cd once on one VM, Pxe once on the other.
        answer = requests.post(url + cd.cd + '/Actions/VirtualMedia.'
                               'InsertMedia', json={'Image': held.url},
                               timeout=30)
        assert answer.status_code == 204, answer.text
        cd.patch_boot(url, 'Cd', 'Once')
        pxe.patch_boot(url, 'Pxe', 'Once')
        harness.wait_until(lambda: cd.dv_phase() == 'ImportInProgress',
                           20, 0.05, 'import in progress')
        before = cd.media(url)
        assert (before['Image'], before['Inserted']) == (held.url, False)
        assert cd.boot(url) == ('Cd', 'Once')
        _kill(first)

        # Pxe once is consumed while no emulator runs.
        status, body = backend.admin_request(sim, 'PUT',
                                             KUBEVIRT_API % pxe.name, {})
        assert status in (200, 202), body
        harness.wait_until(
            lambda: (harness.vmi(sim, pxe.name) or {}).get(
                'status', {}).get('phase') == 'Running', 20, 0.05,
            'VMI running')

        os.makedirs(tmp_path / 'second')
        second = harness.emulator_process(
            'sushy-kubevirt-emulator', config, tmp_path / 'second', port)
        second.start().wait_ready()
        assert second.url == url

        after = cd.media(url)
        for key in ('Image', 'ImageName', 'Inserted', 'WriteProtected'):
            assert after[key] == before[key], key
        assert after['Status']['State'] == 'Starting'
        oem = after['Oem']['SushyKubevirt']
        assert oem['DataVolume'] == before['Oem']['SushyKubevirt'][
            'DataVolume']
        assert oem['ImportPhase'] == 'ImportInProgress'
        assert cd.boot(url) == ('Cd', 'Once')
        refused = cd.reset(url, 'On')
        assert refused.status_code == 409 and CONFLICT in refused.text

        held.release()
        harness.wait_until(lambda: cd.media(url)['Inserted'], 20, 0.05,
                           'Inserted after the import')
        assert cd.media(url)['Status'] == {'State': 'Enabled',
                                           'Health': 'OK'}
        answer = cd.reset(url, 'On')
        assert answer.status_code == 204, answer.text
        harness.wait_until(
            lambda: (harness.vmi(sim, cd.name) or {}).get('status', {})
            .get('phase') == 'Running', 20, 0.05, 'VMI running')
        vmi_orders = _orders(harness.vmi(sim, cd.name)['spec']['domain'][
            'devices'])
        assert vmi_orders[media.disk_name('Cd')] == 1

        # Both one-time boots are restored by the new process: the one
        # consumed before it started and the one consumed after.
        for system in (cd, pxe):
            harness.wait_until(
                lambda: system.boot(url) == ('Hdd', 'Disabled'), 20,
                0.05, '%s boot order restored' % system.name)
            vm = system.vm()
            assert boot.ONCE_ANNOTATION not in vm['metadata'].get(
                'annotations', {})
            assert _orders(vm['spec']['template']['spec']['domain'][
                'devices'])['root'] == 1
        assert _orders(harness.vmi(sim, pxe.name)['spec']['domain'][
            'devices'])['default'] == 1
    finally:
        for process in (first, second):
            if process is not None:
                process.stop()
