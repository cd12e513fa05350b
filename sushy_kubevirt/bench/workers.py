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

"""One keep-alive connection to each gunicorn worker of an emulator.

The workers share one listening socket, so the kernel picks the worker of
each connection. A keep-alive connection stays with the worker that
accepted it, and ``/proc`` tells which one that is (the process holding
the socket whose peer is our local port): sync, metrics and RSS are then
measured worker by worker, not by chance.
"""

import http.client
import json
import os
import threading
import time

from sushy_kubevirt.bench import procs
from sushy_kubevirt.kube import accounting


def _server_inode(port, peer_port):
    with open('/proc/net/tcp') as table:
        next(table)
        for line in table:
            fields = line.split()
            local, remote = fields[1], fields[2]
            if (int(local.rsplit(':', 1)[1], 16) == port
                    and int(remote.rsplit(':', 1)[1], 16) == peer_port):
                return fields[9]
    return None


def serving_pid(port, conn, pids):
    """The pid among ``pids`` holding the server side of ``conn``.

    None when the server has closed it, or no process of ``pids`` has it.
    """
    if conn.sock is None:
        return None
    inode = _server_inode(port, conn.sock.getsockname()[1])
    return inode and _owner(pids, inode)


def _owner(pids, inode):
    target = 'socket:[%s]' % inode
    for pid in pids:
        try:
            fds = os.listdir('/proc/%d/fd' % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink('/proc/%d/fd/%s' % (pid, fd)) == target:
                    return pid
            except OSError:
                continue
    return None


def parse_metrics(text):
    """``{(name, labels text): float}`` of a Prometheus text answer."""
    result = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        key, _, value = line.rpartition(' ')
        name, _, labels = key.partition('{')
        result[name, labels.rstrip('}')] = float(value)
    return result


def metric(values, name):
    """The samples of one metric: ``{labels: value}``."""
    return {labels: v for (n, labels), v in values.items() if n == name}


def synced(values):
    """Whether every informer of one worker's metrics is synced."""
    gauges = metric(values, accounting.SYNCED)
    return bool(gauges) and all(v == 1 for v in gauges.values())


class Workers:
    """Keep-alive connections, one per worker pid (reopened as needed)."""

    def __init__(self, port, master_pid, timeout=60.0):
        self.port, self.master_pid, self.timeout = port, master_pid, timeout
        self._conns = {}
        self._lock = threading.Lock()

    def pids(self):
        return sorted(set(procs.rss_kb(self.master_pid)) -
                      {self.master_pid})

    def rss_kb(self):
        """``{pid: VmRSS kB}`` of each worker."""
        every = procs.rss_kb(self.master_pid)
        return {pid: every.get(pid, 0) for pid in self.pids()}

    def _open(self):
        """A connection that has answered once, and its worker's pid."""
        conn = http.client.HTTPConnection('127.0.0.1', self.port,
                                          timeout=self.timeout)
        status, _, _ = self._send(conn, '/redfish/v1/')
        pid = serving_pid(self.port, conn, self.pids())
        if status != 200 or pid is None:
            conn.close()
            return None, None
        return conn, pid

    def connect(self, attempts=200):
        """One connection to every worker; the pids."""
        wanted = set(self.pids())
        spare = []
        for _ in range(attempts):
            if wanted <= set(self._conns):
                break
            conn, pid = self._open()
            if pid is None or pid in self._conns:
                # Held open, so the worker is busier and the next
                # connection more likely goes to another one.
                if conn is not None:
                    spare.append(conn)
                continue
            self._conns[pid] = conn
        for conn in spare:
            conn.close()
        missing = wanted - set(self._conns)
        if missing:
            raise RuntimeError('no connection reached worker(s) %s'
                               % sorted(missing))
        return sorted(self._conns)

    @staticmethod
    def _send(conn, path, method='GET', body=None):
        headers = {'Accept-Encoding': 'identity'}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers['Content-Type'] = 'application/json'
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), response

    def request(self, pid, path, method='GET', body=None, attempts=50):
        """``(status, body)`` of one request answered by worker ``pid``."""
        for _ in range(attempts):
            with self._lock:
                conn = self._conns.pop(pid, None)
            if conn is None:
                conn, got = self._open()
                if got != pid:
                    if conn:
                        conn.close()
                    time.sleep(0.01)
                    continue
            try:
                status, content, response = self._send(
                    conn, path, method, body)
            except (OSError, http.client.HTTPException):
                conn.close()
                continue
            if response.will_close:
                conn.close()
            else:
                with self._lock:
                    self._conns[pid] = conn
            return status, content
        raise RuntimeError('worker %d could not be reached' % pid)

    def metrics(self, pid):
        status, content = self.request(pid, '/metrics')
        if status != 200:
            raise RuntimeError('/metrics of worker %d: %s' % (pid, status))
        return parse_metrics(content.decode())

    def close(self):
        with self._lock:
            conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            conn.close()
