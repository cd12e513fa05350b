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

"""The KubeVirt corpus on the simulator and on the real KubeVirt and CDI.

``test_simulator`` runs every case on the embedded simulator,
``test_kubevirt`` on virt-api, virt-controller, cdi-apiserver and
cdi-controller with simulated nodes (``RealCluster(kubevirt=True)``),
``WORKERS`` cases at a time; ``test_compare`` compares each case's two
transcripts: every difference is a failure unless an entry of ``ALLOWED``
explains it, as doc/source/simulator.rst ("Differences from KubeVirt and
CDI") does for users. None does today.
"""

import concurrent.futures
import http.server
import threading
import time

import pytest
from tests.differential import differences
from tests import kubevirt
from tests.kubevirt import corpus
from tests.kubevirt import recorder

from sushy_kubevirt.simulator import certificates
from sushy_kubevirt.simulator import realcluster
from sushy_kubevirt.simulator import Simulator

pytestmark = pytest.mark.timeout(1200)
WORKERS = 8
#: ``differences.Allowed`` entries
ALLOWED = []
REPORT = differences.Report(ALLOWED, ('simulator', 'kubevirt'))
DELAYS = {'Shutdown': 0.5}
CASES = sorted(corpus.CASES)
TRANSCRIPTS = {}


class Images(str):
    """The image server's URL, with ``https`` and ``ca_pem``.

    ``https``: the same files over https, with a certificate of a
    private CA, whose certificate is ``ca_pem``.
    """


@pytest.fixture(scope='module')
def images():
    done = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path not in ('/good.iso', '/slow.iso'):
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header('Content-Length', '4')
            self.end_headers()
            if self.path == '/slow.iso':
                done.wait(corpus.SLOW)
            self.wfile.write(b'\x00ISO')

        def log_message(self, *args):
            pass
    authority = certificates.Certificates('127.0.0.1')
    servers = [http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
               for _ in range(2)]
    servers[1].socket = authority.server_context.wrap_socket(
        servers[1].socket, server_side=True)
    for httpd in servers:
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
    found = Images('http://127.0.0.1:%d' % servers[0].server_address[1])
    found.https = 'https://127.0.0.1:%d' % servers[1].server_address[1]
    found.ca_pem = authority.ca_pem.decode()
    yield found
    done.set()
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def _case(cluster, name, images):
    session = recorder.Session(cluster, name)
    started = time.monotonic()
    try:
        corpus.CASES[name](session, images)
    except Exception as exc:   # recorded: the other cluster may not fail
        session.transcript.append({'error': '%s: %s' % (
            type(exc).__name__, exc)})
    return session.transcript, time.monotonic() - started


def _run_all(cluster, images):
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        futures = {name: pool.submit(_case, cluster, name, images)
                   for name in CASES}
    for name, future in futures.items():
        TRANSCRIPTS[cluster.name, name], _ = future.result()


def test_simulator(images):
    with Simulator(stage_delays=DELAYS) as sim:
        _run_all(recorder.Cluster('simulator', sim), images)


def test_kubevirt(images, tmp_path):
    cluster = realcluster.RealCluster(kubevirt=True, stage_delays=DELAYS,
                                      workdir=tmp_path)
    kubevirt.start_or_skip(cluster)
    try:
        _run_all(recorder.Cluster('kubevirt', cluster), images)
    finally:
        cluster.stop()


@pytest.mark.parametrize('case', CASES)
def test_compare(case):
    sim = TRANSCRIPTS.get(('simulator', case))
    real = TRANSCRIPTS.get(('kubevirt', case))
    if sim is None or real is None:
        pytest.skip('the case did not run on both clusters')
    unexplained = REPORT.compare(case, sim, real)
    assert not unexplained, '\n'.join(unexplained)


def test_allow_list_is_current():
    ran = [c for c in CASES if ('simulator', c) in TRANSCRIPTS and
           ('kubevirt', c) in TRANSCRIPTS]
    if not ran:
        pytest.skip('no case ran on both clusters')
    assert not REPORT.stale(ran)
