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

"""``python -m sushy_kubevirt.bench.events``: EventService figures.

gunicorn with 2 workers serves a simulated cluster; a receiver on
loopback subscribes. Two runs:

* latency: ``--rate`` of the VMs change each second for ``--seconds``
  (a CPU count edited straight in the simulator's store, as ``kubectl
  edit`` would); each change's ResourceChanged is timed from the write to
  its arrival (p50/p99);
* duplicates and losses: ``--events`` changes as fast as the store takes
  them, spread over the VMs; every change must arrive exactly once.
"""

import argparse
import collections
import http.server
import json
import os
import sys
import tempfile
import threading
import time
import urllib.request

from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import stats
from sushy_kubevirt import files
from sushy_kubevirt.kubevirt import changes
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import Simulator

SUBSCRIPTIONS = '/redfish/v1/EventService/Subscriptions'
CONFIG = {'SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE': 'default',
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_LEASE_DURATION': 6,
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_RENEW_PERIOD': 1,
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_QUEUE_SIZE': 50000,
          'SUSHY_EMULATOR_KUBEVIRT_EVENTS_BUFFER_SIZE': 50000}


class Receiver:
    """Keeps ``(arrival time, event)`` for every event POSTed to it."""

    def __init__(self):
        self.got = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def do_POST(self):
                body = json.loads(self.rfile.read(
                    int(self.headers['Content-Length'])))
                now = time.monotonic()
                with receiver.lock:
                    receiver.got += [(now, e) for e in body['Events']]
                self.send_response(204)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d/' % self.server.server_port
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()

    def changed(self):
        with self.lock:
            return [(t, e) for t, e in self.got
                    if e['MessageId'].endswith('.ResourceChanged')]


def _request(url, method='GET', body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={
        'Content-Type': 'application/json'})
    with urllib.request.urlopen(req, timeout=10) as answer:
        return answer.status, answer.read().decode()


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError('%s: not within %.0f s' % (what, timeout))


def _candidates(url):
    text = _request(url + '/metrics')[1]
    return {line.split('"')[1]: line.endswith(' 1') for line in
            text.splitlines()
            if line.startswith('sushy_kubevirt_events_leader{')}


class Bench:

    def __init__(self, args, tmp):
        self.args = args
        self.sim = Simulator(vms=args.vms, namespaces=1,
                             tls=False).start()
        kubeconfig = self.sim.write_kubeconfig(os.path.join(tmp, 'kc'))
        config = os.path.join(tmp, 'emulator.conf')
        lines = ['import sushy_kubevirt.plugin  # noqa',
                 "SUSHY_EMULATOR_SYSTEMS_DRIVER = 'kubevirt'",
                 'SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG = %r' % kubeconfig,
                 'SUSHY_EMULATOR_STATE_DIR = %r' % tmp]
        lines += ['%s = %r' % item for item in sorted(CONFIG.items())]
        files.replace(config, '\n'.join(lines) + '\n')
        self.port = procs.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.log = os.path.join(tmp, 'gunicorn.log')
        self.proc = procs.spawn(
            [os.path.join(os.path.dirname(sys.executable), 'gunicorn'),
             '-w', '2', '--threads', '4', '-b', '127.0.0.1:%d' % self.port,
             'sushy_tools.emulator.main:app'], self.log,
            env={'SUSHY_EMULATOR_CONFIG': config})
        self.rt = self.sim.store.resource('kubevirt.io', 'virtualmachines')
        self.vms = sorted(vm['metadata']['name']
                          for vm in self.sim.store.list(self.rt)[0])
        self.cores = collections.Counter()

    def start(self):
        procs.wait_http(self.proc, self.port, '/redfish/v1/Systems', 120,
                        self.log)
        seen = {}

        def joined():
            # Each worker joins at its first request; on a loaded machine
            # one can serve hundreds while the other still boots.
            seen.update(_candidates(self.url))
            return len(seen) == 2
        try:
            _wait(joined, 60, 'both workers joined')
        except RuntimeError:
            pass    # reported as workers_joined
        _wait(lambda: any(_candidates(self.url).values()), 30, 'a leader')
        return len(seen)

    def stop(self):
        procs.stop(self.proc)
        self.sim.stop()

    def subscribe(self, receiver):
        status, body = _request(self.url + SUBSCRIPTIONS, 'POST', {
            'Destination': receiver.url, 'Protocol': 'Redfish',
            'ResourceTypes': ['ComputerSystem']})
        assert status == 201, body
        sub_id = json.loads(body)['Id']
        # One change, awaited: the leader has listed the subscription.
        probe = self.vms[-1]
        self.change(probe)
        _wait(receiver.changed, 30, 'the first event')
        with receiver.lock:
            receiver.got.clear()
        return sub_id

    def unsubscribe(self, sub_id):
        _request(self.url + SUBSCRIPTIONS + '/' + sub_id, 'DELETE')

    def change(self, name):
        self.cores[name] += 1
        cores = 100 + self.cores[name]

        def edit(vm):
            domain = vm['spec']['template']['spec']['domain']
            domain.setdefault('cpu', {})['cores'] = cores
        self.sim.store.mutate(self.rt, 'default', name, edit)

    def path(self, name):
        vm = self.sim.store.get(self.rt, 'default', name)
        return changes.system_uri(identity.firmware_uuid(vm))

    def latency(self):
        receiver = Receiver()
        sub_id = self.subscribe(receiver)
        per_second = max(1, round(len(self.vms) * self.args.rate))
        sent = collections.defaultdict(list)
        start = time.monotonic()
        for tick in range(int(self.args.seconds)):
            for i in range(per_second):
                name = self.vms[(tick * per_second + i) % len(self.vms)]
                sent[self.path(name)].append(time.monotonic())
                self.change(name)
            time.sleep(max(0.0, start + tick + 1 - time.monotonic()))
        total = sum(len(v) for v in sent.values())
        _wait(lambda: len(receiver.changed()) >= total, 60,
              'latency events')
        got = collections.defaultdict(list)
        for arrived, event in receiver.changed():
            got[event['OriginOfCondition']['@odata.id']].append(arrived)
        latencies = sorted((a - t) * 1000 for origin, times in sent.items()
                           for t, a in zip(times, got[origin]))
        self.unsubscribe(sub_id)
        receiver.server.shutdown()
        return {'changes': total, 'per_second': per_second,
                'p50_ms': round(stats.percentile(latencies, 0.5), 1),
                'p99_ms': round(stats.percentile(latencies, 0.99), 1)}

    def exactly_once(self):
        receiver = Receiver()
        sub_id = self.subscribe(receiver)
        count = self.args.events
        start = time.monotonic()
        for i in range(count):
            self.change(self.vms[i % len(self.vms)])
        try:
            _wait(lambda: len(receiver.changed()) >= count,
                  self.args.timeout, 'all events')
        except RuntimeError:
            pass
        time.sleep(1.0)  # late duplicates
        wall = time.monotonic() - start
        ids = collections.Counter(e['EventId']
                                  for _, e in receiver.changed())
        self.unsubscribe(sub_id)
        receiver.server.shutdown()
        metrics = _request(self.url + '/metrics')[1]
        dropped = sum(int(line.rsplit(' ', 1)[1]) for line in
                      metrics.splitlines() if line.startswith(
                          'sushy_kubevirt_events_total{outcome="dropped"'))
        return {'changes': count, 'received': sum(ids.values()),
                'unique': len(ids),
                'duplicates': sum(ids.values()) - len(ids),
                'losses': count - len(ids), 'dropped_seen': dropped,
                'seconds': round(wall, 1)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench.events', description=__doc__)
    add = parser.add_argument
    add('--vms', type=int, default=1000)
    add('--rate', type=float, default=0.01,
        help='fraction of the VMs changed each second')
    add('--seconds', type=float, default=10)
    add('--events', type=int, default=10000)
    add('--timeout', type=float, default=300)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='bench-events-') as tmp:
        bench = Bench(args, tmp)
        try:
            workers = bench.start()
            result = {'vms': args.vms, 'workers_joined': workers,
                      'latency': bench.latency(),
                      'exactly_once': bench.exactly_once()}
        finally:
            bench.stop()
    print(json.dumps(result, indent=2))
    return result


if __name__ == '__main__':
    main()
