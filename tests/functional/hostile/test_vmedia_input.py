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

"""Hostile input to virtual media and HttpBootUri, over real HTTP.

Every refused request must be a 4xx naming a Base registry message and
change nothing in the simulator (no write in its request log, same VM
spec, no DataVolume, no Secret). Image servers on 127.0.0.1 play slow,
redirecting and internal services; they stop with the module.
"""

import http.server
import json
import socket
import threading
import time
from urllib import parse as urlparse

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.hostile import conftest
from tests.functional.vmedia import conftest as vmedia_conftest

from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import media

#: The image check deadline of this module's emulators (seconds): 20
#: times the check's wait (url_wait, 0.5 s), so that an InsertMedia held
#: to the deadline cannot pass for one that was not, however loaded the
#: machine.
CHECK_TIMEOUT = 10.0
INSERT = '/Actions/VirtualMedia.InsertMedia'
EJECT = '/Actions/VirtualMedia.EjectMedia'
#: Texts that would tell a prober what is behind a port.
LEAKS = ('Errno', 'refused', 'Unauthorized', '401', 'timed out', 'reset')
SLOW_HOPS = 31
TRICKLE_SECONDS = 20.0


@pytest.fixture(scope='module')
def emulator_settings():
    return {'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_DENIED_HOSTS': [
        '127.0.0.2/32', 'localhost'],
        'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT': CHECK_TIMEOUT}


class _Hostile(http.server.BaseHTTPRequestHandler):
    """Image servers gone bad, by path.

    ``/trickle/..``: headers trickled one byte per 0.5 s for 20 s;
    ``/hop/<n>/..``: a 302 to hop n+1 after 1.5 s (31 hops);
    ``/chain/<n>/..``: n fast 302s, then 200; ``/to/<url>``: a 302 to
    url; ``/private``: 401, as an internal service would answer.
    """

    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def _redirect(self, location):
        self.send_response(302)
        self.send_header('Location', location)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def do_HEAD(self):
        stop = self.server.stopping
        parts = self.path.strip('/').split('/')
        if parts[0] == 'trickle':
            self.wfile.write(b'HTTP/1.1 200 OK\r\nX-Slow: ')
            for _ in range(int(TRICKLE_SECONDS / 0.5)):
                if stop.wait(0.5):
                    break
                self.wfile.write(b'x')
                self.wfile.flush()
            self.close_connection = True
        elif parts[0] == 'hop' and int(parts[1]) < SLOW_HOPS:
            stop.wait(1.5)
            parts[1] = str(int(parts[1]) + 1)
            self._redirect('/' + '/'.join(parts))
        elif parts[0] == 'chain' and int(parts[1]) > 0:
            parts[1] = str(int(parts[1]) - 1)
            self._redirect('/' + '/'.join(parts))
        elif parts[0] == 'to':
            self._redirect(urlparse.unquote(parts[1]))
        elif parts[0] == 'private':
            self.send_response(401, 'Unauthorized')
            self.send_header('WWW-Authenticate', 'Bearer')
            self.send_header('Content-Length', '0')
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header('Content-Length', str(64 * 1024))
            self.end_headers()

    do_GET = do_HEAD


@pytest.fixture(scope='module')
def hostile():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Hostile)
    server.daemon_threads = True
    server.stopping = threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.url = lambda path: 'http://127.0.0.1:%d%s' % (
        server.server_port, path)
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture(scope='module')
def silent_port():
    """An open TCP port that accepts and closes without a word."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stopping = threading.Event()

    def serve():
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stopping.set()
        thread.join(5)
        listener.close()


@pytest.fixture(scope='module')
def victim(machines):
    """One VM for every refused request (they change nothing)."""
    return machines()


def _secrets(sim):
    rt = sim.store.resource('', 'secrets')
    return {s['metadata']['name']: s
            for s in sim.store.list(rt, 'default')[0]}


def _state(machine):
    return (machine.spec(), machine.vm()['metadata'].get('annotations'),
            [dv['metadata']['name'] for dv in machine.datavolumes()],
            sorted(n for n in _secrets(machine.sim)
                   if n.startswith(machine.name + '-')))


def _send(machine, path, data, method='POST'):
    kwargs = {'timeout': 30}
    if isinstance(data, str):
        kwargs.update(data=data,
                      headers={'Content-Type': 'application/json'})
    else:
        kwargs['json'] = data
    return requests.request(method, machine.url(path), **kwargs)


def _refused(machine, tally, path, data, message_ids, method='POST'):
    """Send a hostile request; assert a clear 4xx and no change."""
    before = _state(machine)
    machine.sim.request_log.clear()
    answer = _send(machine, path, data, method)
    changed = bool(vmedia_conftest.writes(machine.sim)) or \
        _state(machine) != before
    tally.record(answer, changed)
    assert 400 <= answer.status_code < 500, answer.text
    assert conftest.message_id(answer) in message_ids, answer.text
    assert not changed
    return answer


BODIES = ['[]', 'null', '"On"', '{"Image": ', '42']


@pytest.mark.parametrize('data', BODIES)
def test_insert_body_not_an_object(victim, tally, data):
    _refused(victim, tally, victim.cd + INSERT, data, ('MalformedJSON',))


@pytest.mark.parametrize('data', BODIES + ['{"Extra": 1}'])
def test_eject_body(victim, tally, data):
    ids = ('ActionParameterUnknown',) if data == '{"Extra": 1}' \
        else ('MalformedJSON',)
    _refused(victim, tally, victim.cd + EJECT, data, ids)


TYPE_ERROR = ('ActionParameterValueTypeError',)
FORMAT_ERROR = ('ActionParameterValueFormatError',)
IMAGE = 'http://127.0.0.1:9/x.iso'
BAD_PARAMETERS = [
    ('UserName number', {'UserName': 123, 'Password': 'x'}, TYPE_ERROR),
    ('Password number', {'UserName': 'u', 'Password': 123}, TYPE_ERROR),
    ('UserName list', {'UserName': ['u'], 'Password': 'x'}, TYPE_ERROR),
    ('Inserted string', {'Inserted': 'yes'}, TYPE_ERROR),
    ('WriteProtected string', {'WriteProtected': 'no'}, TYPE_ERROR),
    ('TransferMethod number', {'TransferMethod': 5}, TYPE_ERROR),
    ('Image number', {'Image': 123}, TYPE_ERROR),
    ('Image list', {'Image': [IMAGE]}, TYPE_ERROR),
    ('Image missing', {'Image': None}, ('ActionParameterMissing',)),
    ('unknown parameter', {'Extra': 1}, ('ActionParameterUnknown',)),
    ('unknown parameters', {'Color': 'blue', 'Size': 2},
     ('ActionParameterUnknown',)),
    ('bad IPv6', {'Image': 'http://[::1/x.iso'}, FORMAT_ERROR),
    ('port out of range', {'Image': 'http://127.0.0.1:99999/x.iso'},
     FORMAT_ERROR),
    ('no host', {'Image': 'http:///x.iso'}, FORMAT_ERROR),
    ('file scheme', {'Image': 'file:///etc/passwd'}, FORMAT_ERROR),
    ('gopher scheme', {'Image': 'gopher://127.0.0.1:70/x'}, FORMAT_ERROR),
    ('too long', {'Image': 'http://127.0.0.1/' + 'a' * 2100},
     ('StringValueTooLong',)),
    ('CR/LF', {'Image': IMAGE + '\r\nX-Injected: 1'}, FORMAT_ERROR),
    ('LF', {'Image': 'http://127.0.0.1/a\n.iso'}, FORMAT_ERROR),
    ('NUL', {'Image': 'http://127.0.0.1/a\x00.iso'}, FORMAT_ERROR),
    ('space', {'Image': 'http://127.0.0.1/a b.iso'}, FORMAT_ERROR),
    ('userinfo without password', {'Image': 'http://u@127.0.0.1/x.iso'},
     FORMAT_ERROR),
    ('userinfo and UserName', {
        'Image': 'http://u:p@127.0.0.1:9/x.iso', 'UserName': 'u',
        'Password': 'p'}, ('ActionParameterValueConflict',)),
    ('writable CD', {'WriteProtected': False},
     ('ActionParameterValueConflict',)),
    ('unknown protocol', {'TransferProtocolType': 'NFS'},
     ('ActionParameterValueNotInList',)),
]


@pytest.mark.parametrize('case,extra,ids', BAD_PARAMETERS,
                         ids=[c[0] for c in BAD_PARAMETERS])
def test_insert_parameters(victim, tally, case, extra, ids):
    body = dict({'Image': IMAGE}, **extra)
    answer = _refused(victim, tally, victim.cd + INSERT, body, ids)
    assert 'p@' not in answer.text


def test_ssrf_denied_hosts(victim, tally, sim, hostile):
    api = urlparse.urlsplit(sim.url)
    port = hostile.server_port
    denied = [
        'http://169.254.169.254/latest/meta-data/',
        'http://[fe80::1]/x.iso',
        'http://[::ffff:169.254.169.254]/x.iso',
        'http://0.0.0.0:%d/x.iso' % port,
        'http://metadata.google.internal/x.iso',
        # the API server's own address and port
        '%s://127.0.0.1:%d/api/v1/secrets' % (api.scheme, api.port),
        # configured denials: a CIDR and a name
        'http://127.0.0.2:%d/x.iso' % port,
        'http://localhost:%d/x.iso' % port,
        # redirects, each hop checked
        hostile.url('/to/' + urlparse.quote(
            'http://169.254.169.254/x.iso', safe='')),
        hostile.url('/to/' + urlparse.quote(sim.url + '/api', safe='')),
        hostile.url('/to/' + urlparse.quote(
            'http://localhost:%d/x.iso' % port, safe='')),
        # more redirects than allowed (3)
        hostile.url('/chain/5/x.iso'),
    ]
    for image in denied:
        answer = _refused(victim, tally, victim.cd + INSERT,
                          {'Image': image},
                          ('ActionParameterValueConflict',))
        assert 'refused' in answer.json()['error']['message'], image


def test_closed_and_open_ports_answer_alike(machines, tally, hostile,
                                            silent_port):
    """No errno, no upstream status: the import reports the outcome."""
    images = {
        'closed port': 'http://127.0.0.1:%d/x.iso' % harness.free_port(),
        'silent open port': 'http://127.0.0.1:%d/x.iso' % silent_port,
        'internal service (401)': hostile.url('/private'),
        'image server': hostile.url('/image/x.iso'),
    }
    answers = {}
    for case, image in images.items():
        machine = machines()
        answer = machine.insert(image)
        tally.record(answer, True)
        answers[case] = answer.status_code
        assert not any(leak in answer.text for leak in LEAKS), answer.text
        assert machine.eject().status_code == 204
    assert set(answers.values()) == {204}, answers


def test_userinfo_goes_to_the_secret_only(machine, tally, images, sim):
    plain = images.add('ui-%s.iso' % machine.name)
    image = plain.replace('http://', 'http://alice:s3cr%40t@')
    answer = machine.insert(image)
    tally.record(answer, True)
    assert answer.status_code == 204, answer.text
    shown = requests.get(machine.url(machine.cd), timeout=30).text
    assert 's3cr' not in shown and 'alice' not in shown
    assert json.loads(shown)['Image'] == plain
    dv = machine.dv()
    assert dv['spec']['source']['http']['url'] == plain
    stored = json.dumps(dv) + json.dumps(machine.vm())
    assert 's3cr' not in stored and 'alice' not in stored
    secret = _secrets(sim)[dv['spec']['source']['http']['secretRef']]
    assert secret['data'] == media.secret_body(
        machine.vm(), 'Cd', machine.dv_name, 'alice', 's3cr@t')['data']
    assert [o['uid'] for o in secret['metadata']['ownerReferences']] == [
        machine.vm()['metadata']['uid']]
    machine.wait_phase('Succeeded')
    assert machine.eject().status_code == 204
    assert secret['metadata']['name'] not in _secrets(sim)


def test_http_boot_uri_userinfo_not_recorded(machine, tally, images):
    plain = images.add('hb-%s.iso' % machine.name)
    uri = plain.replace('http://', 'http://bob:pw%2Fx@')
    assert machine.boot_mode('UEFI').status_code == 204
    answer = requests.patch(machine.url(machine.path), json={'Boot': {
        'BootSourceOverrideTarget': 'UefiHttp', 'HttpBootUri': uri}},
        timeout=30)
    tally.record(answer, answer.status_code < 300)
    assert answer.status_code == 204, answer.text
    system = requests.get(machine.url(machine.path), timeout=30).json()
    assert system['Boot']['HttpBootUri'] == plain
    stored = json.dumps(machine.vm()) + json.dumps(machine.dv())
    assert 'pw%2F' not in stored and 'bob' not in stored
    assert machine.eject().status_code == 204


def test_http_boot_uri_unset_reads_null(machine):
    # The System shows HttpBootUri in UEFI mode only.
    assert machine.boot_mode('UEFI').status_code == 204
    system = requests.get(machine.url(machine.path), timeout=30).json()
    assert system['Boot']['HttpBootUri'] is None


def test_no_secret_left_behind(machine, tally, images, sim):
    """DataVolume create fails (503) and so does the Secret's cleanup."""
    image = images.add('orphan-%s.iso' % machine.name)
    # That of the tray's next generation, which the insert makes.
    secret = media.secret_name(media.datavolume_name(
        machine.vm(), 'Cd', generations.generation(machine.vm(), 'Cd') + 1))
    rules = [sim.faults.status(503, method='POST', path='/datavolumes$'),
             sim.faults.status(503, method='DELETE', path='/secrets/')]
    try:
        answer = machine.insert(image, UserName='u', Password='p')
    finally:
        for rule in rules:
            sim.faults.remove(rule)
    # An injected API failure, not hostile input: not tallied. (Redfish
    # 503 with Retry-After is the Kubernetes error mapping's job.)
    assert answer.status_code >= 500, answer.text
    left = _secrets(sim)[secret]
    assert [o['uid'] for o in left['metadata']['ownerReferences']] == [
        machine.vm()['metadata']['uid']]
    assert machine.datavolumes() == []
    # The next eject removes it.
    assert machine.eject().status_code == 204
    assert secret not in _secrets(sim)

    # The same again; this time the next insert replaces it.
    rules = [sim.faults.status(503, method='POST', path='/datavolumes$'),
             sim.faults.status(503, method='DELETE', path='/secrets/')]
    try:
        assert machine.insert(image, UserName='u', Password='p') \
            .status_code >= 500
    finally:
        for rule in rules:
            sim.faults.remove(rule)
    uid = _secrets(sim)[secret]['metadata']['uid']
    assert machine.insert(image, UserName='u2', Password='p2') \
        .status_code == 204
    assert _secrets(sim)[secret]['metadata']['uid'] != uid
    assert machine.dv()['spec']['source']['http']['secretRef'] == secret
    assert machine.eject().status_code == 204
    harness.wait_until(lambda: secret not in _secrets(sim), 10, 0.05,
                       'Secret deleted')


def _p95(samples):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _get_p95(base, count=40):
    """p95 of ``GET /Systems`` through ``base``, nothing else running."""
    samples = []
    for _ in range(count):
        start = time.monotonic()
        assert requests.get(base + '/redfish/v1/Systems',
                            timeout=60).status_code == 200
        samples.append(time.monotonic() - start)
    return _p95(samples)


def _slow_inserts(base, trays, hostile):
    """Four slow inserts through ``base`` while GETs run: figures."""
    images = [hostile.url('/trickle/a.iso'), hostile.url('/trickle/b.iso'),
              hostile.url('/hop/0/c.iso'), hostile.url('/hop/0/d.iso')]
    took = {}

    def insert(tray, image):
        start = time.monotonic()
        answer = requests.post(base + tray.cd + INSERT,
                               json={'Image': image}, timeout=60)
        took[image] = (answer, time.monotonic() - start)

    threads = [threading.Thread(target=insert, args=pair, daemon=True)
               for pair in zip(trays, images)]
    for thread in threads:
        thread.start()
    samples = []
    # The checks go on in the background until their deadline: sample
    # the whole time the slow servers hold a socket.
    busy_until = time.monotonic() + CHECK_TIMEOUT + 1
    stop_at = time.monotonic() + TRICKLE_SECONDS + 10
    while (any(t.is_alive() for t in threads)
           or time.monotonic() < busy_until) and len(samples) < 5000 \
            and time.monotonic() < stop_at:
        start = time.monotonic()
        answer = requests.get(base + '/redfish/v1/Systems', timeout=60)
        samples.append(time.monotonic() - start)
        assert answer.status_code == 200
    for thread in threads:
        thread.join(TRICKLE_SECONDS + 10)
    longest = max(elapsed for _, elapsed in took.values())
    return [a for a, _ in took.values()], longest, _p95(samples), samples


def test_slow_image_servers_hold_no_worker(machines, tally, hostile,
                                           emulator):
    """Four slow inserts end by the deadline; GETs stay fast meanwhile."""
    trays = [machines() for _ in range(4)]
    quiet = _get_p95(emulator.url)
    answers, longest, p95, samples = _slow_inserts(emulator.url, trays,
                                                   hostile)
    print('\nlongest InsertMedia under slow image servers: %.2f s; '
          'GET /Systems during 4 slow inserts: p95 %.1f ms over %d GETs '
          '(%.1f ms before)' % (longest, p95 * 1000, len(samples),
                                quiet * 1000))
    for answer in answers:
        tally.record(answer, True)
        assert answer.status_code == 204, answer.text
    # The request waits url_wait (0.5 s) for the check, not its deadline;
    # a held worker would make GETs wait seconds.
    assert longest < CHECK_TIMEOUT / 2
    assert p95 < max(0.5, 5 * quiet)
    for tray in trays:
        assert tray.eject().status_code == 204


def test_slow_image_servers_under_gunicorn(machines, hostile, sim,
                                           tmp_path):
    """Ironic devstack's gunicorn setting: 2 workers x 2 threads."""
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kubeconfig')),
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMEOUT=CHECK_TIMEOUT)
    process = harness.emulator_process('gunicorn', config, tmp_path)
    trays = [machines() for _ in range(4)]
    try:
        process.start().wait_ready()
        quiet = _get_p95(process.url)
        answers, longest, p95, samples = _slow_inserts(process.url, trays,
                                                       hostile)
        print('\ngunicorn 2x2: longest InsertMedia %.2f s; GET /Systems '
              'p95 %.1f ms over %d GETs (%.1f ms before)' % (
                  longest, p95 * 1000, len(samples), quiet * 1000))
        assert [a.status_code for a in answers] == [204] * 4
        assert longest < CHECK_TIMEOUT / 2
        assert p95 < max(0.5, 5 * quiet)
        for tray in trays:
            assert requests.post(process.url + tray.cd + EJECT, json={},
                                 timeout=30).status_code == 204
    finally:
        process.stop()
