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

"""Several emulator processes agree on virtual media and the boot device.

Under gunicorn with 2 workers x 2 threads (as Ironic devstack runs
sushy-emulator) each request is a new connection (``Connection: close``,
as sushy sends) and gunicorn's access log names the worker pid that
served it, so the test knows that a write made by one worker is read by
the other. Two separate ``sushy-kubevirt-emulator`` processes on one
cluster model two replicas, where the test chooses who serves what.
"""

import concurrent.futures
import itertools
import os

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

CONFLICT = 'ActionParameterValueConflict'
BATCH = 8
CLOSE = {'Connection': 'close'}


@pytest.fixture(scope='module')
def config(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('workers')
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    return harness.write_config(
        tmp / 'emulator.conf', kubeconfig,
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT=2)


class Workers:
    """gunicorn 2 x 2; ``send`` returns (worker pid, response)."""

    def __init__(self, config, tmp):
        self.access_log = str(tmp / 'access.log')
        self.process = harness.emulator_process('gunicorn', config, tmp)
        app = self.process.argv.pop()
        self.process.argv += ['--access-logfile', self.access_log,
                              '--access-logformat', '%(p)s %(q)s', app]
        self.url = self.process.url
        self._probes = itertools.count()

    def _pid(self, probe):
        def find():
            if not os.path.exists(self.access_log):
                return None
            with open(self.access_log) as log:
                for line in log:
                    pid, _sep, query = line.strip().partition(' ')
                    if query == 'probe=%d' % probe:
                        return pid.strip('<>')
            return None
        return harness.wait_until(find, 10, 0.02, 'access log line')

    def send(self, method, path, **kwargs):
        probe = next(self._probes)
        response = requests.request(
            method, self.url + path, params={'probe': probe},
            headers=CLOSE, timeout=30, **kwargs)
        return self._pid(probe), response

    def batch(self, path):
        """``BATCH`` concurrent GETs: [(pid, JSON body)]."""
        with concurrent.futures.ThreadPoolExecutor(BATCH) as pool:
            answers = list(pool.map(lambda _i: self.send('GET', path),
                                    range(BATCH)))
        for _pid, response in answers:
            assert response.status_code == 200, response.text
        return [(pid, response.json()) for pid, response in answers]


@pytest.fixture(scope='module')
def workers(config, tmp_path_factory):
    running = Workers(config, tmp_path_factory.mktemp('gunicorn'))
    running.process.start()
    try:
        running.process.wait_ready()
        yield running
    finally:
        running.process.stop()


def agreed(workers, path, check, writer):
    """Pids of a batch that all pass ``check``, not all from ``writer``."""
    def attempt():
        answers = workers.batch(path)
        pids = {pid for pid, _body in answers}
        if pids - {writer} and all(check(body) for _pid, body in answers):
            return pids
        return None
    return harness.wait_until(attempt, 20, 0.05, 'workers agree')


def test_gunicorn_workers_agree(sim, images, workers):
    machine = conftest.Machine(sim, workers.url, 'vm-00000')
    image = images.add('workers.iso')
    pids = set()

    writer, answer = workers.send(
        'POST', machine.cd + '/Actions/VirtualMedia.InsertMedia',
        json={'Image': image})
    assert answer.status_code == 204, answer.text
    pids |= agreed(workers, machine.cd,
                   lambda body: body['Image'] == image, writer)
    pids |= agreed(workers, machine.cd,
                   lambda body: body['Inserted'] is True, writer)

    writer, answer = workers.send('PATCH', machine.path, json={'Boot': {
        'BootSourceOverrideTarget': 'Cd'}})
    assert answer.status_code == 204, answer.text
    pids |= agreed(workers, machine.path, lambda body: body['Boot'][
        'BootSourceOverrideTarget'] == 'Cd', writer)

    writer, answer = workers.send(
        'POST', machine.cd + '/Actions/VirtualMedia.EjectMedia', json={})
    assert answer.status_code == 204, answer.text
    pids |= agreed(workers, machine.cd, lambda body: (
        body['Image'], body['Inserted']) == (None, False), writer)
    # Ejecting the boot device makes Hdd the boot device, everywhere.
    pids |= agreed(workers, machine.path, lambda body: body['Boot'][
        'BootSourceOverrideTarget'] == 'Hdd', writer)
    assert len(pids) == 2, pids
    assert machine.dv() is None


@pytest.fixture(scope='module')
def replicas(config, tmp_path_factory):
    processes = []
    try:
        for index in range(2):
            tmp = tmp_path_factory.mktemp('replica%d' % index)
            processes.append(harness.emulator_process(
                'sushy-kubevirt-emulator', config, tmp).start())
        yield [process.wait_ready().url for process in processes]
    finally:
        for process in processes:
            process.stop()


def test_replicas_agree(sim, images, replicas):
    one, other = (conftest.Machine(sim, url, 'vm-00001')
                  for url in replicas)
    image = images.add('replicas.iso')

    assert one.insert(image).status_code == 204
    # The other replica refuses a power-on at once: it never starts the
    # VM from an image that is still being imported.
    refused = other.reset('On')
    assert refused.status_code == 409 and CONFLICT in refused.text, \
        refused.text
    assert other.spec()['runStrategy'] == 'Halted'
    state = other.media()
    assert (state['Image'], state['Inserted']) == (image, False)
    harness.wait_until(lambda: other.media()['Inserted'], 20, 0.05,
                       'Inserted on the other replica')

    assert one.boot('Cd').status_code == 204
    harness.wait_until(
        lambda: requests.get(other.url(other.path), timeout=30).json()[
            'Boot']['BootSourceOverrideTarget'] == 'Cd', 10, 0.02,
        'boot device Cd on the other replica')

    assert other.eject().status_code == 204
    # The eject's VM patch and DataVolume deletion reach the first
    # replica on two watches, in either order: await both.
    harness.wait_until(
        lambda: (one.media()['Image'], one.media()['Inserted']) == (
            None, False) and requests.get(one.url(one.path), timeout=30)
        .json()['Boot']['BootSourceOverrideTarget'] == 'Hdd', 10, 0.02,
        'empty, booting Hdd, on the first replica')
    assert one.dv() is None


def test_lagging_replica_refuses_power_on(sim, images, replicas, config,
                                          tmp_path):
    # The new replica's VirtualMachine watch delivers events 1.5 s late.
    sim.faults.event_delay(1.5, path='virtualmachines$',
                           query={'watch': None}, times=1)
    lagging = harness.emulator_process('sushy-kubevirt-emulator', config,
                                       tmp_path).start()
    writer = conftest.Machine(sim, replicas[0], 'vm-00002')
    try:
        late = conftest.Machine(sim, lagging.wait_ready().url, 'vm-00002')
        assert writer.insert(images.add('lagging.iso')).status_code == 204
        answer = late.reset('On')
        assert writer.dv()['status'].get('phase') != 'Succeeded'
        assert answer.status_code == 409 and CONFLICT in answer.text, \
            answer.status_code
    finally:
        lagging.stop()
        writer.eject()
