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

"""Child processes: spawn, wait until serving, measure RSS, stop."""

import http.client
import os
import signal
import subprocess
import time

from sushy_kubevirt import ports
from sushy_kubevirt import tethered


class StartError(RuntimeError):
    """A child process exited or did not answer before its deadline."""


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    return ports.restartable('127.0.0.1')


def spawn(argv, log_path, env=None, cpus=None, **kwargs):
    """Start ``argv`` in its own process group, output appended to a log.

    It gets SIGTERM when this process dies (:func:`tethered.popen`).
    ``cpus``: the CPUs it (and every process it starts) may run on
    (``taskset``, which execs it: the pid is the program's).
    """
    log = open(log_path, 'ab')
    if cpus:
        argv = ['taskset', '--cpu-list',
                ','.join(str(cpu) for cpu in sorted(cpus))] + list(argv)
    try:
        return tethered.popen(
            argv, stdout=kwargs.pop('stdout', log), stderr=log,
            stdin=kwargs.pop('stdin', subprocess.DEVNULL),
            env=dict(os.environ, **(env or {})), start_new_session=True,
            **kwargs)
    finally:
        log.close()


def log_tail(log_path, limit=2000):
    try:
        with open(log_path, 'rb') as log:
            return log.read()[-limit:].decode('utf-8', 'replace')
    except OSError:
        return ''


def http_get(port, path, timeout=10.0):
    """``(status, body bytes)`` of one GET on 127.0.0.1 (Connection: close)."""
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    try:
        conn.request('GET', path, headers={'Connection': 'close'})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def wait_http(proc, port, path, deadline_s, log_path):
    """Poll ``path`` until it answers 200; StartError on exit or timeout."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StartError('%s exited with %s:\n%s' % (
                proc.args[0], proc.returncode, log_tail(log_path)))
        try:
            if http_get(port, path, timeout=2.0)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise StartError('%s did not answer %s within %.0f s:\n%s' % (
        proc.args[0], path, deadline_s, log_tail(log_path)))


def stop(proc, grace_s=10.0):
    """SIGTERM the child's process group, then SIGKILL after ``grace_s``."""
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def children(pid):
    """The pids of the child processes of ``pid``."""
    found = []
    try:
        tasks = os.listdir('/proc/%d/task' % pid)
    except OSError:
        return found
    for task in tasks:
        try:
            with open('/proc/%d/task/%s/children' % (pid, task)) as f:
                found.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return found


def _rss_kb(pid, field='VmRSS:'):
    try:
        with open('/proc/%d/status' % pid) as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_ticks(pid):
    try:
        with open('/proc/%d/stat' % pid) as stat:
            fields = stat.read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return 0
    # utime and stime: fields 14 and 15 of proc(5), counted from 1.
    return int(fields[11]) + int(fields[12])


def cpu_s(pid):
    """CPU seconds (user + system) of a process and its descendants."""
    ticks, todo = 0, [pid]
    while todo:
        current = todo.pop()
        ticks += _cpu_ticks(current)
        todo.extend(children(current))
    return ticks / os.sysconf('SC_CLK_TCK')


def rss_kb(pid, field='VmRSS:'):
    """``{pid: VmRSS kB}`` of a process and all its descendants.

    ``field='VmHWM:'``: their peaks instead.
    """
    result, todo = {}, [pid]
    while todo:
        current = todo.pop()
        result[current] = _rss_kb(current, field)
        todo.extend(children(current))
    return result
