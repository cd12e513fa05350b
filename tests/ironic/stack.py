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

"""Everything the Ironic lifecycle test runs, on loopback, stopped on exit.

* the simulator (in this process, so its request log can be read);
* the emulator under gunicorn, 2 workers x 2 threads, against it;
* an HTTP server for the boot ISO, the BIOS firmware image and Ironic's
  ``http_root``, and an HTTPS server of the same root whose certificate
  a CA made here signs (the CA's PEM is :attr:`Stack.image_ca`);
* Ironic (PyPI, pinned by ``tox -e ironic``) in standalone mode: one
  ``ironic`` process (API and conductor), sqlite, noauth,
  ``rpc_transport = none``, no message bus.

With ``accounts``, the emulator has an htpasswd file and an accounts
file: Ironic logs in as :data:`OPERATOR`, an Operator scoped to the
VMs' namespace, and the test reads as :data:`ADMIN`.
"""

import contextlib
import functools
import http.server
import os
import pathlib
import ssl
import subprocess
import sys
import threading

import bcrypt
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.ironic import iso

from sushy_kubevirt.controlplane import pki

BIN = os.path.dirname(sys.executable)
STAGES = {'Scheduling': 0.2, 'Scheduled': 0.2, 'Running': 0.3}
ISO_NAME = 'tiny.iso'
#: The BIOS image of the firmware update; its version is in its name.
FIRMWARE_NAME, FIRMWARE_VERSION = 'bios-2.1.0.bin', '2.1.0'
READY_TIMEOUT = 120.0
WORKERS = 2
#: Ironic's defaults that the lifecycle must hold with, spelled out.
POWER_SYNC_INTERVAL = 60
PASSWORD = 'Ironic-s3cret'
OPERATOR, ADMIN = 'ironic', 'admin'
ACCOUNTS = """\
accounts:
  %s: {role: Operator, namespaces: [default]}
  %s: {role: Administrator}
""" % (OPERATOR, ADMIN)

IRONIC_CONF = """\
[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = sushy-kubevirt-ci
state_path = {state}
tempdir = {tmp}
log_file = {log}
debug = true
use_stderr = false
enabled_hardware_types = redfish
enabled_bios_interfaces = redfish
enabled_boot_interfaces = redfish-virtual-media
enabled_console_interfaces = no-console
enabled_deploy_interfaces = ramdisk
default_deploy_interface = ramdisk
enabled_firmware_interfaces = redfish,no-firmware
enabled_inspect_interfaces = redfish
enabled_management_interfaces = redfish
enabled_network_interfaces = noop
enabled_power_interfaces = redfish
enabled_raid_interfaces = no-raid
enabled_rescue_interfaces = no-rescue
enabled_storage_interfaces = noop
enabled_vendor_interfaces = {vendor}

[api]
host_ip = 127.0.0.1
port = {api_port}

[conductor]
automated_clean = false
sync_power_state_interval = {sync}
force_power_state_during_sync = true
deploy_callback_timeout = 600

[database]
connection = sqlite:///{state}/ironic.sqlite

[deploy]
http_root = {http_root}
http_url = {http_url}
iso_master_path = {state}/master_iso_images
default_boot_mode = uefi

[dhcp]
dhcp_provider = none

[pxe]
images_path = {state}/images
instance_master_path = {state}/master_images
tftp_root = {state}/tftpboot
tftp_master_path = {state}/tftpboot/master_images

[redfish]
# Polls of BIOS and firmware steps (and their reboots) every 2 s.
firmware_update_status_interval = 2
# After a firmware update, one read of the System, its Manager, Chassis
# and NetworkAdapters shows the BMC answers (not 3, 30 s apart: the checks
# hold Ironic's periodic worker, one node after the other).
firmware_update_required_successes = 1
firmware_update_validation_interval = 1

[oslo_concurrency]
lock_path = {state}/locks
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    #: The list :meth:`handle_error` appends TLS alerts to.
    alerts = None

    def handle_error(self, request, client_address):
        """A TLS error is no error here; a client's alert is recorded."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, ssl.SSLError):
            super().handle_error(request, client_address)
        elif 'ALERT' in (exc.reason or '') and self.alerts is not None:
            self.alerts.append(exc.reason)


@contextlib.contextmanager
def http_server(root, tls=None, alerts=None):
    """Serve ``root`` on 127.0.0.1; yields the base URL.

    :param tls: an :class:`ssl.SSLContext` to serve HTTPS with.
    :param alerts: a list to append the alerts of clients' TLS handshakes
        to (``TLSV1_ALERT_UNKNOWN_CA``: a client rejected the certificate).
    """
    handler = functools.partial(_Quiet, directory=root)
    server = _Server(('127.0.0.1', 0), handler)
    server.alerts = alerts
    if tls is not None:
        # The handshake happens in the request's thread, not the accept loop.
        server.socket = tls.wrap_socket(server.socket, server_side=True,
                                        do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield '%s://127.0.0.1:%d' % ('https' if tls else 'http',
                                     server.server_port)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class Ironic(harness.Process):
    """The ``ironic`` all-in-one process and its REST API."""

    def __init__(self, tmp, http_root, http_url, vendor='no-vendor'):
        self.tmp = tmp
        port = harness.free_port()
        state = os.path.join(tmp, 'ironic')
        for sub in ('', 'locks', 'tmp'):
            os.makedirs(os.path.join(state, sub), exist_ok=True)
        self.ironic_log = os.path.join(tmp, 'ironic.log')
        self.conf = os.path.join(tmp, 'ironic.conf')
        with open(self.conf, 'w') as out:
            out.write(IRONIC_CONF.format(
                state=state, tmp=os.path.join(state, 'tmp'),
                log=self.ironic_log, api_port=port, http_root=http_root,
                http_url=http_url, sync=POWER_SYNC_INTERVAL, vendor=vendor))
        super().__init__([os.path.join(BIN, 'ironic'), '--config-file',
                          self.conf], port,
                         os.path.join(tmp, 'ironic.out'))

    def start(self):
        subprocess.run([os.path.join(BIN, 'ironic-dbsync'), '--config-file',
                        self.conf, 'create_schema'], check=True,
                       capture_output=True, timeout=120)
        return super().start()

    def wait_ready(self, timeout=READY_TIMEOUT):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError('ironic exited with %s:\n%s'
                                     % (self.proc.returncode, self.tail()))
            try:
                drivers = requests.get(self.url + '/v1/drivers', timeout=5)
            except requests.RequestException:
                return False
            return drivers.ok and any(
                d['name'] == 'redfish' for d in drivers.json()['drivers'])
        harness.wait_until(ready, timeout, 0.5, 'ironic ready')
        return self

    def tail(self, lines=60):
        try:
            with open(self.ironic_log, errors='replace') as log:
                return ''.join(log.readlines()[-lines:])
        except OSError:
            return self.log()

    def log_text(self):
        with open(self.ironic_log, errors='replace') as log:
            return log.read()


class Stack:
    """Simulator, emulator, image server and Ironic; ``with Stack(...)``.

    :param settings: extra emulator config keys.
    :param vendor: Ironic's ``enabled_vendor_interfaces``.
    """

    def __init__(self, tmp, vms=3, settings=None, vendor='no-vendor',
                 accounts=False):
        self.tmp = str(tmp)
        self.vms = vms
        self.settings = dict(settings or {})
        self.vendor = vendor
        #: Basic credentials of the test's own reads (None: no auth).
        self.admin = (ADMIN, PASSWORD) if accounts else None
        #: Ironic's ``redfish_username`` and ``redfish_password``.
        self.credentials = {}
        if accounts:
            self.settings.update(self._accounts())
            self.credentials = {'redfish_username': OPERATOR,
                                'redfish_password': PASSWORD}
        self._exit = contextlib.ExitStack()
        self.sim = self.emulator = self.ironic = None
        self.http_url = self.iso_url = self.https_url = None
        self.http_root = None
        self.firmware_url = self.image_ca = None
        #: The HTTPS server's handshakes that a client ended with an alert.
        self.tls_alerts = []

    def _accounts(self):
        htpasswd = os.path.join(self.tmp, 'htpasswd')
        digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(6))
        with open(htpasswd, 'w') as out:
            for user in (OPERATOR, ADMIN):
                out.write('%s:%s\n' % (user, digest.decode()))
        accounts = os.path.join(self.tmp, 'accounts.yaml')
        with open(accounts, 'w') as out:
            out.write(ACCOUNTS)
        return {'SUSHY_EMULATOR_AUTH_FILE': htpasswd,
                'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE': accounts}

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self._exit.close()
            raise
        return self

    def __exit__(self, *exc):
        self._exit.close()

    def _start(self):
        self.sim = backend.start(
            vms=self.vms, stage_delays=STAGES)
        self._exit.callback(self.sim.stop)
        #: What the image servers serve (Ironic publishes its ISOs here).
        self.http_root = http_root = os.path.join(self.tmp, 'httpboot')
        os.makedirs(os.path.join(http_root, 'images'))
        with open(os.path.join(http_root, 'images', ISO_NAME), 'wb') as out:
            out.write(iso.tiny_iso())
        with open(os.path.join(http_root, 'images', FIRMWARE_NAME),
                  'wb') as out:
            out.write(b'\0' * 4096)
        self.http_url = self._exit.enter_context(http_server(http_root))
        self.https_url = self._exit.enter_context(
            http_server(http_root, self._tls(), self.tls_alerts))
        self.iso_url = '%s/images/%s' % (self.http_url, ISO_NAME)
        self.firmware_url = '%s/images/%s' % (self.http_url, FIRMWARE_NAME)
        kubeconfig = self.sim.write_kubeconfig(
            os.path.join(self.tmp, 'kubeconfig'))
        config = harness.write_config(
            os.path.join(self.tmp, 'emulator.conf'), kubeconfig,
            **self.settings)
        self.emulator = harness.emulator_process(
            'gunicorn', config, _Path(self.tmp))
        self._exit.callback(self.emulator.stop)
        self.ironic = Ironic(self.tmp, http_root, self.http_url,
                             self.vendor)
        self._exit.callback(self.ironic.stop)
        self.emulator.start()
        self.ironic.start()
        self.emulator.wait_ready(path='/redfish/v1/')
        self._warm_up()
        self.ironic.wait_ready()

    def _tls(self):
        """A server context whose certificate a CA made here signs."""
        tls_dir = pathlib.Path(self.tmp, 'image-tls')
        tls_dir.mkdir()
        authority = pki.Authority(tls_dir, 'ca', 'image server CA')
        cert, key = authority.issue('server', '127.0.0.1',
                                    hosts=('127.0.0.1',))
        self.image_ca = authority.path.read_text()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        return context

    def _warm_up(self):
        """Let both gunicorn workers sync their watch caches."""
        def synced():
            for _ in range(4):
                requests.get(self.emulator.url + '/redfish/v1/Systems',
                             auth=self.admin, timeout=10)
            return self.sim.request_log.count(
                verb='list', resource='virtualmachines') >= WORKERS
        harness.wait_until(synced, 30, 0.2, 'both workers synced')


class _Path(str):
    """``tmp / name`` for :func:`harness.emulator_process`."""

    def __truediv__(self, name):
        return os.path.join(self, name)
