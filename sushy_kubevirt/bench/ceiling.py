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

"""The framework's limit: a bare Flask app answering from a dict.

:func:`capture` records what a running emulator answers (status, headers,
body bytes) to the GETs the load sends; :class:`Ceiling` serves exactly
those answers from a dict, on the same server (waitress set as
``sushy-kubevirt-emulator`` sets it, :mod:`.waitressed`, or gunicorn with
the emulator's workers and threads). Its throughput is what Flask and the
server allow with no work per request: the emulator's throughput over it
is the share left to the emulator's own work.
``python -m sushy_kubevirt.bench.ceiling ANSWERS PORT`` serves it on
waitress.

Each process of the emulator keeps its own answers and ETags, so
:func:`start` first has every process (each gunicorn worker) answer
every System twice (:func:`warm`): a warm emulator is one whose every
process has seen every System.
"""

import concurrent.futures
import http.client
import json
import os
import sys

import flask

from sushy_kubevirt.bench import emulators
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import waitressed
from sushy_kubevirt.bench import workers
from sushy_kubevirt import files

#: Headers the server sets itself on every answer.
_SERVER_HEADERS = ('date', 'server', 'connection', 'content-length',
                   'transfer-encoding', 'keep-alive')
ENV = 'SUSHY_KUBEVIRT_BENCH_CEILING'


def _get(port, path):
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60.0)
    try:
        conn.request('GET', path, headers={
            'OData-Version': '4.0', 'Accept-Encoding': 'identity',
            'Connection': 'close'})
        response = conn.getresponse()
        headers = [(k, v) for k, v in response.getheaders()
                   if k.lower() not in _SERVER_HEADERS]
        return response.status, headers, response.read().decode('utf-8')
    finally:
        conn.close()


def _connections(emulator, tries=32):
    """One kept-alive connection to each process serving ``emulator``."""
    pids = [emulator.proc.pid] + procs.children(emulator.proc.pid)
    found, spare = {}, []
    for _ in range(tries):
        conn = http.client.HTTPConnection('127.0.0.1', emulator.port,
                                          timeout=60.0)
        conn.request('GET', '/redfish/v1/')
        conn.getresponse().read()
        pid = workers.serving_pid(emulator.port, conn, pids)
        (spare if pid in found or pid is None else found.setdefault(
            pid, [])).append(conn)
        if len(found) == max(1, len(pids) - 1):   # gunicorn: its workers
            break
    for conn in spare:
        conn.close()
    # A server that closes every connection (the development server) is
    # one process: any connection reaches it.
    return [conns[0] for conns in found.values()] or [
        http.client.HTTPConnection('127.0.0.1', emulator.port, timeout=60.0)]


def _answer_all(conn, ids, passes):
    try:
        for _ in range(passes):
            for ident in ids:
                conn.request('GET', load.SYSTEM % ident,
                             headers={'OData-Version': '4.0'})
                conn.getresponse().read()
    finally:
        conn.close()


def warm(emulator, ids, passes=2):
    """Have each process of ``emulator`` answer every System.

    ``passes`` times, on a kept-alive connection to each (a process keeps
    its own rendered answers and ETags). Returns how many processes.
    """
    conns = _connections(emulator)
    with concurrent.futures.ThreadPoolExecutor(len(conns)) as pool:
        for done in [pool.submit(_answer_all, conn, ids, passes)
                     for conn in conns]:
            done.result()
    return len(conns)


def capture(port, ids, path):
    """Write the answers of ``port`` to the load's GETs into ``path``."""
    paths = ['/redfish/v1/', '/redfish/v1/Systems'] + [
        load.SYSTEM % ident for ident in ids]
    answers = {p: _get(port, p) for p in paths}
    files.replace(path, json.dumps(answers))
    return answers


def create(path=None):
    """The Flask app serving the answers saved in ``path``."""
    with open(path or os.environ[ENV]) as saved:
        answers = {p: (status, headers, body.encode('utf-8'))
                   for p, (status, headers, body) in json.load(saved).items()}
    app = flask.Flask(__name__)

    @app.route('/', defaults={'path': ''})
    @app.route('/<path:path>')
    def answer(path):
        found = answers.get('/' + path)
        if found is None:
            flask.abort(404)
        status, headers, body = found
        return flask.Response(body, status, headers)
    return app


class Ceiling(emulators.Emulator):
    """The ceiling app as a process on ``server``, with its answers."""

    def __init__(self, server, answers_path, port, log_path):
        self.server, self.driver, self.port = server, 'ceiling', port
        self.log_path, self.profiled = log_path, False
        if server == 'gunicorn':
            argv = [sys.executable, '-m', 'gunicorn',
                    '--bind', '127.0.0.1:%d' % port,
                    '--workers', str(emulators.WORKERS),
                    '--threads', str(emulators.THREADS)] + \
                emulators._no_control_socket() + [__name__ + ':create()']
        else:
            argv = [sys.executable, '-m', __name__, answers_path, str(port)]
        self.proc = procs.spawn(argv, log_path,
                                env={ENV: answers_path,
                                     'PYTHONHASHSEED': '0'})


def start(emulator, ids, workdir):
    """A ceiling beside ``emulator``, answering what it answers to ``ids``."""
    port = procs.free_port()
    name = 'ceiling-%s-%d' % (emulator.server, port)
    answers = os.path.join(workdir, name + '.json')
    warm(emulator, ids)
    capture(emulator.port, ids, answers)
    ceiling = Ceiling(emulator.server, answers, port,
                      os.path.join(workdir, name + '.log'))
    try:
        ceiling.wait_ready()
    except BaseException:
        ceiling.stop()
        raise
    return ceiling


def table(entries):
    """Text table of :func:`.quick.ceilings`' entries."""
    lines = ['%-7s %-10s %9s %9s %8s %8s %10s %10s' % (
        'VMs', 'server', 'req/s', 'ceiling', 'share', 'CPU', 'p99 ms',
        'ceil p99')]
    for entry in entries:
        get = entry['get']
        lines.append('%-7d %-10s %9s %9s %8s %8s %10s %10s' % (
            entry['vms'], entry['server'], get['warm']['total']['rps'],
            get['fake']['total']['rps'], get['rps'], get['cpu'],
            get['warm']['total']['p99_ms'], get['fake']['total']['p99_ms']))
    return '\n'.join(lines)


def main(argv=None):
    answers, port = (argv or sys.argv[1:])[:2]
    waitressed.serve(create(answers), '127.0.0.1', int(port))


if __name__ == '__main__':
    main()
