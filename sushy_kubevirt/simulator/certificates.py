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

"""The API server's TLS: a CA of its own and a serving certificate.

Made afresh for every simulator (an EC P-256 CA and leaf take about
5 ms) with ``controlplane.pki``, in a private temporary directory that
lives as long as the ``Certificates`` object (or the process). The
kubeconfig carries the CA as ``certificate-authority-data``, so clients
verify the server as they verify a real cluster's.
"""

import ipaddress
import pathlib
import shutil
import ssl
import tempfile
import weakref

from sushy_kubevirt.controlplane import pki

#: Names the serving certificate is valid for, besides a specific host.
LOOPBACK = ('127.0.0.1', '::1', 'localhost')


class Certificates:
    """A CA, a serving certificate for ``host`` and loopback, a context."""

    def __init__(self, host):
        workdir = pathlib.Path(tempfile.mkdtemp(prefix='sushy-kubevirt-sim-'))
        weakref.finalize(self, shutil.rmtree, workdir, ignore_errors=True)
        ca = pki.Authority(workdir, 'ca', 'sushy-kubevirt-simulator-ca')
        cert, key = ca.issue('apiserver', 'sushy-kubevirt-simulator',
                             hosts=_hosts(host))
        #: The CA certificate (PEM): its file and its bytes.
        self.ca_file = str(ca.path)
        self.ca_pem = ca.path.read_bytes()
        self.server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_context.load_cert_chain(cert, key)


def _hosts(host):
    try:
        if ipaddress.ip_address(host).is_unspecified:
            return LOOPBACK  # 0.0.0.0 or ::: no name to certify
    except ValueError:
        pass  # a DNS name
    return tuple(dict.fromkeys((host,) + LOOPBACK))
