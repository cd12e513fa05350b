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

"""The load generator, run as its own process (``python -m ...bench.load``).

It reads one JSON spec on stdin and writes one JSON result on stdout, so the
emulator under test never shares a CPU-bound interpreter with its client.
Requests use ``http.client`` with ``Connection: close`` like sushy (or one
keep-alive connection per thread), and are bounded in count and time.

A closed loop by default: each of ``parallel`` threads sends its next task
when the last one is answered. With ``rate``, an open loop: tasks arrive
``rate`` times a second whatever the answers, ``parallel`` threads send
them, and a task's first latency counts from its arrival (waiting for a
free thread included); a task not sent within ``late_s`` of its arrival is
dropped and counted.
"""

import collections
import http.client
import itertools
import json
import subprocess
import sys
import threading
import time

from sushy_kubevirt.bench import stats

SYSTEM = '/redfish/v1/Systems/%s'
#: An ``$expand`` past the bound at more than 100 VMs: a 400.
REFUSED_EXPAND = '/redfish/v1/Systems?$expand=.($levels=2)'
WORKLOADS = ('pr32', 'ironic', 'mixed')


def _req(kind, method, path, body=None):
    return kind, method, path, body


def list_systems(node):
    return [_req('list_systems', 'GET', '/redfish/v1/Systems')]


def get_system(node):
    return [_req('get_system', 'GET', SYSTEM % node)]


def refused_expand(node):
    return [_req('refused_expand', 'GET', REFUSED_EXPAND)]


def get_secureboot(node):
    return [_req('get_secureboot', 'GET', SYSTEM % node + '/SecureBoot')]


def poll(node):
    """Ironic's power-state sync for one node: 4 x System, 1 x SecureBoot."""
    return get_system(node) * 4 + get_secureboot(node)


def reset(node):
    """Power on, then force off again (the node ends as it started)."""
    path = SYSTEM % node + '/Actions/ComputerSystem.Reset'
    return [_req('reset', 'POST', path, {'ResetType': kind})
            for kind in ('On', 'ForceOff')]


def noop_reset(node):
    """ForceOff of a node that is already off (every task leaves it off)."""
    return [_req('noop_reset', 'POST',
                 SYSTEM % node + '/Actions/ComputerSystem.Reset',
                 {'ResetType': 'ForceOff'})]


def boot_patch(node):
    """Boot from Pxe, then back to Hdd, as Ironic's set_boot_device."""
    return [_req('boot_patch', 'PATCH', SYSTEM % node,
                 {'Boot': {'BootSourceOverrideTarget': target,
                           'BootSourceOverrideEnabled': 'Continuous'}})
            for target in ('Pxe', 'Hdd')]


def vmedia(node, image_url):
    """Insert an ISO (Image only, as Ironic sends it), then eject it."""
    path = SYSTEM % node + '/VirtualMedia/Cd/Actions/VirtualMedia.%s'
    return [_req('vmedia_insert', 'POST', path % 'InsertMedia',
                 {'Image': image_url}),
            _req('vmedia_eject', 'POST', path % 'EjectMedia', {})]


def _mixed(node, i, image_url):
    slot = i % 10
    if slot == 3:
        return reset(node)
    if slot == 6:
        return boot_patch(node)
    if slot == 9 and image_url:
        return vmedia(node, image_url)
    return poll(node)


def _capacity(node, i, image_url):
    """Ironic's traffic: power polls, a boot PATCH and a vmedia cycle."""
    slot = i % 20
    if slot == 9:
        return boot_patch(node)
    if slot == 19 and image_url:
        return vmedia(node, image_url)
    if slot in (4, 14):
        return get_secureboot(node)
    return get_system(node)


_SINGLE = {'list_systems': list_systems, 'get_system': get_system,
           'get_secureboot': get_secureboot, 'poll': poll, 'reset': reset,
           'noop_reset': noop_reset, 'boot_patch': boot_patch,
           'refused_expand': refused_expand}


def tasks(spec):
    """The bounded list of tasks (each a list of requests) for a spec."""
    nodes, budget = spec['systems'], spec['requests']
    workload, image = spec['workload'], spec.get('image_url')
    cycle = itertools.cycle(nodes)
    result, planned = [], 0
    for i in itertools.count():
        if workload == 'mixed':
            task = _mixed(next(cycle), i, image)
        elif workload == 'capacity':
            task = _capacity(next(cycle), i, image)
        elif workload in ('pr32', 'serial'):
            task = get_system(next(cycle))
        elif workload == 'ironic':
            task = poll(next(cycle))
        elif workload == 'vmedia':
            task = vmedia(next(cycle), image)
        else:
            task = _SINGLE[workload](next(cycle))
        if planned + len(task) > budget and result:
            return result
        result.append(task)
        planned += len(task)


class Client:
    """One client thread's connection (new per request unless keep-alive)."""

    def __init__(self, port, keepalive, timeout):
        self.port, self.keepalive, self.timeout = port, keepalive, timeout
        self.conn = None

    def send(self, method, path, body):
        if self.conn is None:
            self.conn = http.client.HTTPConnection('127.0.0.1', self.port,
                                                   timeout=self.timeout)
        headers = {'OData-Version': '4.0', 'Accept-Encoding': 'identity'}
        if not self.keepalive:
            headers['Connection'] = 'close'
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['Content-Type'] = 'application/json'
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            content = response.read()
        except Exception:
            self.close()
            raise
        if not self.keepalive or response.will_close:
            self.close()
        return response.status, content

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def run(spec):
    """Run a spec's tasks from ``parallel`` threads; return the summary."""
    todo = enumerate(tasks(spec))
    lock = threading.Lock()
    samples = collections.defaultdict(list)
    statuses = collections.defaultdict(collections.Counter)
    failures, dropped = [], []
    rate, late_s = spec.get('rate'), spec.get('late_s', 1.0)

    def worker():
        client = Client(spec['port'], spec.get('keepalive', False),
                        spec.get('timeout', 60.0))
        # An open loop ends with its arrivals: each is sent or dropped.
        while rate or time.perf_counter() < started + spec['seconds']:
            with lock:
                index, task = next(todo, (None, None))
            if task is None:
                break
            due = rate and started + index / rate
            if rate and due >= started + spec['seconds']:
                break
            if rate and time.perf_counter() > due + late_s:
                dropped.append(index)
                continue
            time.sleep(max(0.0, (due or 0.0) - time.perf_counter()))
            for kind, method, path, body in task:
                start = due or time.perf_counter()
                due = None
                try:
                    status, content = client.send(method, path, body)
                except Exception as exc:
                    status, content = 0, repr(exc).encode()
                elapsed = time.perf_counter() - start
                with lock:
                    samples[kind].append(elapsed)
                    statuses[kind][status] += 1
                    if status >= 400 or not status:
                        if len(failures) < 5:
                            failures.append('%s %s %s: %s' % (
                                method, path, status, content[:300]))
        client.close()

    started = time.perf_counter()
    threads = [threading.Thread(target=worker)
               for _ in range(spec['parallel'])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    return dict(_result(samples, statuses, failures, wall),
                dropped=len(dropped))


def _errors(counter):
    return sum(n for code, n in counter.items() if code >= 400 or not code)


def _result(samples, statuses, failures, wall):
    kinds = {}
    for kind, values in sorted(samples.items()):
        kinds[kind] = stats.summarize(values, wall, _errors(statuses[kind]))
        kinds[kind]['statuses'] = {str(code): n for code, n
                                   in sorted(statuses[kind].items())}
    everything = [v for values in samples.values() for v in values]
    total = stats.summarize(everything, wall,
                            sum(_errors(c) for c in statuses.values()))
    return {'total': total, 'kinds': kinds, 'failures': failures}


def main():
    spec = json.load(sys.stdin)
    json.dump(run(spec), sys.stdout)
    sys.stdout.write('\n')


def spawn_run(spec, timeout_s=None):
    """Run one spec in a fresh load-generator process; return its result."""
    timeout_s = timeout_s or spec['seconds'] + spec.get('timeout', 60.0) + 30
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench.load'],
        input=json.dumps(spec), capture_output=True, text=True,
        timeout=timeout_s, check=False)
    if done.returncode:
        raise RuntimeError('load generator failed (%s):\n%s'
                           % (done.returncode, done.stderr[-2000:]))
    return json.loads(done.stdout)


if __name__ == '__main__':
    main()
