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

"""``sushy-kubevirt-emulator``'s server against slow and streaming clients.

Slow clients send their request a byte a second, from one thread, over
loopback; the legitimate client's latencies are compared with its own
before they came, in the same run.
"""

import datetime
import os
import subprocess
import sys
import time

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import NameOID
import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.events import sse
from tests.functional import slowclients

from sushy_kubevirt.redfish import base

BIN = os.path.dirname(sys.executable)
SLOW_CLIENTS = 8
#: sushy-kubevirt-emulator's default --request-timeout.
REQUEST_TIMEOUT = 10


def _get(url):
    return slowclients.get_seconds(url + '/redfish/v1/Systems')


@pytest.fixture(scope='module')
def demo(tmp_path_factory):
    port = harness.free_port()
    process = harness.Process(
        [os.path.join(BIN, 'sushy-kubevirt-emulator'), '--simulate', '1',
         '-i', '127.0.0.1', '-p', str(port)], port,
        str(tmp_path_factory.mktemp('demo') / 'demo.log'))
    try:
        yield process.start().wait_ready()
    finally:
        process.stop()


def test_slow_clients_hold_no_thread_and_are_cut_off(demo):
    timeout = REQUEST_TIMEOUT
    quiet = [_get(demo.url) for _ in range(30)]
    port = int(demo.url.rpartition(':')[2])
    loud = []
    with slowclients.SlowClients(port, SLOW_CLIENTS, timeout + 8) as slow:
        deadline = time.monotonic() + timeout + 6
        while len(slow.closed) < SLOW_CLIENTS and \
                time.monotonic() < deadline:
            loud.append((len(slow.closed), _get(demo.url)))
    # Every GET was answered while all the slow clients were connected,
    # about as fast as without them.
    while_all = [seconds for cut, seconds in loud if cut == 0]
    assert len(while_all) >= 20, (len(while_all), slow.closed)
    slowclients.assert_as_fast(while_all, quiet)
    # ... and the server cut each one off at the request timeout.
    assert len(slow.closed) == SLOW_CLIENTS, slow.closed
    assert all(timeout - 0.5 <= s <= timeout + 4 for s in slow.closed), \
        slow.closed
    log = demo.log()
    assert '"GET /redfish/v1/Systems HTTP/1.1" 200 ' in log
    assert log.count('no whole request within %d s' % timeout) == \
        SLOW_CLIENTS


def test_bodies_past_the_limit_are_refused(demo):
    systems = requests.get(demo.url + '/redfish/v1/Systems',
                           timeout=10).json()
    system = demo.url + systems['Members'][0]['@odata.id']
    headers = {'Content-Type': 'application/json'}
    answer = requests.patch(system, data=b' ' * (base.MAX_BODY + 1),
                            headers=headers, timeout=30)
    assert answer.status_code == 413
    assert answer.json()['error']['@Message.ExtendedInfo']
    # Past it, the server refuses before reading the body.
    answer = requests.patch(system, data=b' ' * (4 * base.MAX_BODY),
                            headers=headers, timeout=30)
    assert answer.status_code == 413


def test_streams_leave_threads_to_plain_requests(tmp_path):
    conf = tmp_path / 'streams.conf'
    conf.write_text('SUSHY_EMULATOR_KUBEVIRT_EVENTS_SSE_STREAMS = 2\n')
    port = harness.free_port()
    process = harness.Process(
        [os.path.join(BIN, 'sushy-kubevirt-emulator'), '--simulate', '1',
         '--config', str(conf), '-i', '127.0.0.1', '-p', str(port)], port,
        str(tmp_path / 'demo.log'))
    try:
        url = process.start().wait_ready().url
        path = requests.get(url + '/redfish/v1/Systems',
                            timeout=10).json()['Members'][0]['@odata.id']
        with sse.Stream(url) as first, sse.Stream(url) as second:
            assert first.response.status_code == 200
            assert second.response.status_code == 200
            assert requests.get(url + sse.URI,
                                timeout=10).status_code == 503
            _get(url)
            assert requests.post(
                url + path + '/Actions/ComputerSystem.Reset',
                json={'ResetType': 'On'}, timeout=10).status_code == 204
            # Streamed as it happens, not buffered.
            first.next(sse.about(path, 'ResourcePoweredOn'))
            second.next(sse.about(path, 'ResourcePoweredOn'))
        assert 'serving on %s (18 threads' % url in process.log()
    finally:
        process.stop()


def _certificate(directory):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, '127.0.0.1')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now).not_valid_after(
                now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    (directory / 'cert.pem').write_bytes(
        cert.public_bytes(serialization.Encoding.PEM))
    (directory / 'key.pem').write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return str(directory / 'cert.pem'), str(directory / 'key.pem')


def test_a_certificate_is_refused_for_a_tls_proxy(tmp_path):
    cert, key = _certificate(tmp_path)
    result = subprocess.run(
        [os.path.join(BIN, 'sushy-kubevirt-emulator'), '-i', '127.0.0.1',
         '-p', str(harness.free_port()),
         '--ssl-certificate', cert, '--ssl-key', key],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert 'serves plain HTTP; put a TLS proxy in front' in result.stderr
