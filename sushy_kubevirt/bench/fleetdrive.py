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

"""Ironic's shapes over HTTP, for ``bench.fleet``; its own process.

``python -m sushy_kubevirt.bench.fleetdrive`` reads one JSON spec on stdin
and writes one JSON result on stdout (as ``bench.load``), so the client
never shares an interpreter with the cluster's simulated nodes:

* the power-state poll (``load.poll``: 4 x System, 1 x SecureBoot) of
  every node once per ``poll_period_s``, spread evenly over the period
  and sent by ``poll_threads`` threads, as Ironic's ``sync_power_state``
  with its workers;
* after ``warm_s`` of polls alone, a deploy wave of ``wave_size`` nodes
  every ``wave_every_s`` (:func:`deploy`), and ``bios_per_wave`` BIOS
  applies beside it (:func:`bios`), each node in a thread of its own.

Everything is bounded: the polls end at ``seconds``, a node's flow at
``node_deadline_s``. The functions taking a ``send`` are also what
``bench.fleet`` runs one request at a time to count each step's calls.
"""

import collections
import json
import sys
import threading
import time

from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import stats

SYSTEM = load.SYSTEM
CD = SYSTEM + '/VirtualMedia/Cd'
RESET = SYSTEM + '/Actions/ComputerSystem.Reset'
#: The BIOS attribute each apply sets (its registry default is Enabled).
BIOS_SETTING = {'ProcTurboMode': 'Disabled'}


class Stopped(Exception):
    """A node's flow passed its deadline."""


def _json(content):
    try:
        return json.loads(content)
    except ValueError:
        return {}


def _wait(send, kind, until, deadline, pause_s, check):
    """GET until ``check`` of the answers holds; bounded by ``deadline``."""
    while True:
        answers = [_json(send(kind, 'GET', path)[1]) for path in until]
        if check(*answers):
            return
        if time.monotonic() > deadline:
            raise Stopped(kind)
        time.sleep(pause_s)


def _reset_on(send, node, kind, deadline, retry_s):
    """Reset On, retried on 409 while the image imports (as Ironic)."""
    while True:
        status, content = send(kind, 'POST', RESET % node, {'ResetType': 'On'})
        if status != 409:
            return status
        if time.monotonic() > deadline:
            raise Stopped(kind)
        time.sleep(retry_s)


def deploy(send, node, image_url, deadline, pause_s=2.0, retry_s=2.0):
    """One node's virtual-media deploy; ``{'insert': t, 'on': t}``.

    Eject what reads Inserted, insert the image, one-time boot from Cd,
    power on (retried on 409), poll System and Cd until On and Inserted,
    eject. ``send(kind, method, path, body=None)`` -> (status, content).
    """
    if _json(send('media_get', 'GET', CD % node)[1]).get('Inserted'):
        send('eject', 'POST', CD % node + '/Actions/VirtualMedia.EjectMedia',
             {})
    times = {'insert': time.time()}
    send('insert', 'POST', CD % node + '/Actions/VirtualMedia.InsertMedia',
         {'Image': image_url})
    send('boot_once', 'PATCH', SYSTEM % node, {'Boot': {
        'BootSourceOverrideTarget': 'Cd',
        'BootSourceOverrideEnabled': 'Once'}})
    _reset_on(send, node, 'reset_on', deadline, retry_s)
    _wait(send, 'wait_on', (SYSTEM % node, CD % node), deadline, pause_s,
          lambda system, cd: system.get('PowerState') == 'On'
          and cd.get('Inserted') is True)
    times['on'] = time.time()
    send('eject', 'POST', CD % node + '/Actions/VirtualMedia.EjectMedia', {})
    return times


def bios(send, node, deadline, pause_s=2.0, retry_s=2.0):
    """PATCH Bios/Settings, power on, GET Bios until the setting applies."""
    send('bios_patch', 'PATCH', SYSTEM % node + '/Bios/Settings',
         {'Attributes': BIOS_SETTING})
    _reset_on(send, node, 'bios_reset', deadline, retry_s)
    _wait(send, 'bios_wait', (SYSTEM % node + '/Bios',), deadline, pause_s,
          lambda bios: all(bios.get('Attributes', {}).get(k) == v
                           for k, v in BIOS_SETTING.items()))


class Recorder:
    """Latency and status of every request, by kind (thread-safe)."""

    def __init__(self, port, timeout_s):
        self.port, self.timeout_s = port, timeout_s
        self.lock = threading.Lock()
        self.samples = collections.defaultdict(list)
        self.statuses = collections.defaultdict(collections.Counter)
        self.failures = []
        self.local = threading.local()

    def send(self, kind, method, path, body=None):
        client = getattr(self.local, 'client', None)
        if client is None:
            client = self.local.client = load.Client(self.port, False,
                                                     self.timeout_s)
        started = time.perf_counter()
        try:
            status, content = client.send(method, path, body)
        except Exception as exc:
            status, content = 0, repr(exc).encode()
        elapsed = time.perf_counter() - started
        with self.lock:
            self.samples[kind].append(elapsed)
            self.statuses[kind][status] += 1
            # A 409 of a reset while the image imports is expected.
            if (not status or status >= 400) and status != 409 \
                    and len(self.failures) < 10:
                self.failures.append('%s %s %s: %s' % (
                    method, path, status, content[:300]))
        return status, content

    def result(self, wall_s):
        kinds = {}
        for kind, values in sorted(self.samples.items()):
            errors = sum(n for code, n in self.statuses[kind].items()
                         if not code or (code >= 400 and code != 409))
            kinds[kind] = dict(stats.summarize(values, wall_s, errors),
                               statuses={str(c): n for c, n in sorted(
                                   self.statuses[kind].items())})
        return kinds


def _polls(spec, rec, started, out):
    nodes, period = spec['poll_nodes'], spec['poll_period_s']
    step = period / len(nodes)
    counter = iter(range(10 ** 9))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                index = next(counter)
            due = started + index * step
            if due >= started + spec['seconds']:
                return
            time.sleep(max(0.0, due - time.monotonic()))
            if time.monotonic() > due + period:
                with lock:
                    out['dropped'] += 1
                continue
            for kind, method, path, body in load.poll(
                    nodes[index % len(nodes)]):
                rec.send(kind, method, path, body)
            with lock:
                out['polls'] += 1
                if due < started + spec['warm_s']:
                    out['warm_polls'] += 1

    return [threading.Thread(target=worker)
            for _ in range(spec['poll_threads'])]


def _node(flow, args, out, key):
    try:
        out[key] = flow(*args)
    except Stopped as exc:
        out[key] = {'stopped': str(exc)}


def _wave(spec, rec, index, started):
    size, bios_n = spec['wave_size'], spec['bios_per_wave']
    first = index * (size + bios_n)
    nodes = spec['wave_nodes'][first:first + size + bios_n]
    time.sleep(max(0.0, started + spec['warm_s'] + index *
                   spec['wave_every_s'] - time.monotonic()))
    deadline = time.monotonic() + spec['node_deadline_s']
    out, threads = {}, []
    for i, node in enumerate(nodes):
        if i < size:
            args = (rec.send, node, spec['image_url'], deadline,
                    spec['pause_s'], spec['retry_s'])
            flow, key = deploy, 'deploy %s' % node
        else:
            args = (rec.send, node, deadline, spec['pause_s'],
                    spec['retry_s'])
            flow, key = bios, 'bios %s' % node
        threads.append(threading.Thread(target=_node,
                                        args=(flow, args, out, key)))
    begun = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return summarize_wave(index, begun, time.time(), out)


def summarize_wave(index, begun, ended, out):
    deploys = [v for k, v in out.items() if k.startswith('deploy ')]
    done = [v for v in deploys if 'on' in v]
    result = {'wave': index, 'nodes': len(deploys), 'on': len(done),
              'bios': sum(1 for k, v in out.items()
                          if k.startswith('bios ') and v is None),
              'bios_nodes': sum(1 for k in out if k.startswith('bios ')),
              'started': begun, 'ended': ended,
              'stopped': sorted({v['stopped'] for v in out.values()
                                 if isinstance(v, dict) and 'stopped' in v})}
    if done:
        first = min(v['insert'] for v in done)
        result['insert_to_all_on_s'] = round(
            max(v['on'] for v in done) - first, 2)
        result['node_insert_to_on_s'] = stats.summarize(
            [v['on'] - v['insert'] for v in done], 1.0)
    return result


def run(spec):
    """The whole load; per-kind latencies, poll counts and waves."""
    rec = Recorder(spec['port'], spec.get('timeout_s', 60.0))
    out = {'polls': 0, 'warm_polls': 0, 'dropped': 0}
    waves = [None] * spec['waves']
    started, epoch = time.monotonic(), time.time()

    def wave(i):
        waves[i] = _wave(spec, rec, i, started)

    threads = _polls(spec, rec, started, out) + [
        threading.Thread(target=wave, args=(i,)) for i in range(spec['waves'])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    return dict(out, kinds=rec.result(wall), failures=rec.failures,
                waves=waves, started=epoch, warm_until=epoch + spec['warm_s'],
                ended=time.time(), wall_s=round(wall, 3))


def main():
    json.dump(run(json.load(sys.stdin)), sys.stdout)
    sys.stdout.write('\n')


if __name__ == '__main__':
    main()
