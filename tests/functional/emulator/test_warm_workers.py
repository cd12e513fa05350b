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

"""gunicorn workers list what they serve when they boot, not on a request.

Two workers, as Ironic's devstack runs them, with and without
``--preload``: once both have listed, the first requests each one answers
make no Kubernetes API call, and neither do those of a worker that
replaces one (as ``max_requests`` recycling does). Which worker answers
is read from gunicorn's access log (its pid).
"""

import os
import re
import signal
import statistics
import time

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

#: The first page of an informer's list.
INFORMER_LIST = {'verb': 'list', 'query': {'limit': '500'}}
#: A gunicorn access log line: the worker's pid, the request line, status.
ACCESS = re.compile(r'^answered by <(\d+)> "(.*)" (\d+)$', re.M)
BOOTED = re.compile(r'Booting worker with pid: (\d+)')


def gunicorn(config, tmp_path, *extra):
    port = harness.free_port()
    argv = [os.path.join(harness.BIN, 'gunicorn'), '-w', '2',
            '--threads', '2', '-b', '127.0.0.1:%d' % port,
            '--graceful-timeout', '5', '--access-logfile', '-',
            '--access-logformat', 'answered by %(p)s "%(r)s" %(s)s'
            ] + list(extra) + ['sushy_tools.emulator.main:app']
    return harness.Process(argv, port, str(tmp_path / 'gunicorn.log'),
                           {'SUSHY_EMULATOR_CONFIG': config})


def answers(process):
    return ACCESS.findall(process.log())


def get(process, path):
    """GET ``path`` on a new connection: ``(worker pid, seconds)``."""
    before = len(answers(process))
    started = time.monotonic()
    response = requests.get(process.url + path, timeout=60,
                            headers={'Connection': 'close'})
    took = time.monotonic() - started
    assert response.status_code == 200, response.text
    lines = harness.wait_until(
        lambda: (lambda a: a if len(a) > before else None)(answers(process)),
        20, 0.05, 'the access log line')
    return lines[-1][0], took


def informer_lists(sim):
    return len(sim.request_log.entries(**INFORMER_LIST))


def healthz(process):
    try:
        answer = requests.get(process.url + '/healthz', timeout=30)
    except requests.ConnectionError:
        return None
    return answer


def spread(process, paths, workers, limit=200):
    """GET ``paths`` in turn until each of ``workers`` answered twice.

    :returns: ``{pid: [seconds of each answer, in order]}``.
    """
    seen = {}
    for count in range(limit):
        pid, took = get(process, paths[count % len(paths)])
        seen.setdefault(pid, []).append(took)
        if all(len(seen.get(w, ())) >= 2 for w in workers):
            return seen
    raise AssertionError('workers %s did not all answer: %s'
                         % (workers, sorted(seen)))


def booted(process):
    return BOOTED.findall(process.log())


@pytest.fixture(scope='module')
def sim():
    cluster = backend.start(vms=4)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.parametrize('preload', [False, True],
                         ids=['load-in-worker', 'preload'])
def test_first_requests_to_each_worker_make_no_api_call(sim, tmp_path,
                                                        preload):
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kubeconfig')))
    sim.request_log.clear()
    process = gunicorn(config, tmp_path,
                       *(['--preload'] if preload else [])).start()
    try:
        answer = harness.wait_until(
            lambda: (lambda a: a if a is not None and a.status_code == 200
                     else None)(healthz(process)), 120, 0.2, '/healthz 200')
        informers = answer.json()['Informers']
        # Both workers listed everything, no request but /healthz asked.
        harness.wait_until(lambda: informer_lists(sim) >= 2 * informers,
                           120, 0.2, "both workers' lists")
        workers = harness.wait_until(
            lambda: (lambda b: b if len(b) == 2 else None)(booted(process)),
            what='two workers booted')
        uuid = identity.firmware_uuid(harness.vm(sim, 'vm-00001'))
        paths = ['/redfish/v1/Systems', '/redfish/v1/Systems/' + uuid]
        backend.log_complete(sim)
        sim.request_log.clear()
        seen = spread(process, paths, workers)
        backend.log_complete(sim)
        assert [e for e in harness.api_calls(sim)
                if e['path'] != '/version'] == []
        later = statistics.median(t for times in seen.values()
                                  for t in times[1:])
        for pid in workers:
            # Generous: a first request that listed would wait for it.
            assert seen[pid][0] < 0.5 + 20 * later, (pid, seen, later)

        # A worker that replaces one lists before it takes traffic.
        sim.request_log.clear()
        os.kill(int(workers[0]), signal.SIGTERM)
        new = harness.wait_until(
            lambda: (lambda b: b[2:] if len(b) > 2 else None)(
                booted(process)), 60, 0.2, 'a new worker booted')
        harness.wait_until(lambda: informer_lists(sim) >= informers,
                           120, 0.2, "the new worker's lists")
        backend.log_complete(sim)
        sim.request_log.clear()
        seen = spread(process, paths, [new[0], workers[1]])
        backend.log_complete(sim)
        assert [e for e in harness.api_calls(sim)
                if e['path'] != '/version'] == []
    finally:
        process.stop()


def test_healthz_is_503_until_the_lists_are_in(sim, tmp_path):
    # The VMs' and VMIs' lists fail until the fault is removed.
    held = sim.faults.status(
        503, times=None, method='GET', query={'limit': '500'},
        path=r'/(virtualmachines|virtualmachineinstances)$')
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kubeconfig')),
        SUSHY_EMULATOR_KUBEVIRT_BOOT_SYNC_WAIT=1)
    process = gunicorn(config, tmp_path).start()
    try:
        # A worker past its wait serves before its lists are in.
        # (A Response with an error status is false.)
        [answer] = harness.wait_until(
            lambda: (lambda a: None if a is None else [a])(healthz(process)),
            120, 0.1, 'a worker serving')
        assert answer.status_code == 503, answer.text
        assert answer.headers['Retry-After'] == '5'
        assert 'The watch cache has not synced' in \
            answer.json()['error']['message']
        sim.faults.remove(held)
        harness.wait_until(
            lambda: all(healthz(process).status_code == 200
                        for _ in range(10)), 60, 0.2, '/healthz 200')
        assert 'Serving before the watch cache synced' in process.log()
    finally:
        sim.faults.remove(held)
        process.stop()
