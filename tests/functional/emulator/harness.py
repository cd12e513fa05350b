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

"""Run the emulator against the simulator over real HTTP.

Three ways as subprocesses (``sushy-emulator --config``, gunicorn with
``SUSHY_EMULATOR_CONFIG``, ``sushy-kubevirt-emulator --config``), always
terminated, and one fast in-process threaded server for feature tests.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import bcrypt
import requests
from sushy import auth as sushy_auth
from sushy_tools.emulator import main
from tests import backend
from werkzeug import serving

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import secretaccounts
from sushy_kubevirt.drivers import clusters
from sushy_kubevirt.kubevirt import disks
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import versions
from sushy_kubevirt import ports
from sushy_kubevirt import tethered

BIN = os.path.dirname(sys.executable)
VM_GROUP = 'kubevirt.io'
READY_TIMEOUT = 40.0
MODES = ('sushy-emulator', 'gunicorn', 'sushy-kubevirt-emulator')


def free_port():
    return ports.restartable('127.0.0.1')


def write_htpasswd(path, user, password):
    """An htpasswd file of one user (bcrypt, cost 4: quick)."""
    path.write_text('%s:%s\n' % (user, bcrypt.hashpw(
        password.encode(), bcrypt.gensalt(4)).decode()))
    return path


def create_account_secret(sim, user, password, role='Administrator',
                          namespace='default'):
    """An account Secret of ``user``, made by the cluster administrator."""
    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
    status, body = backend.admin_request(
        sim, 'POST', '/api/v1/namespaces/%s/secrets' % namespace, {
            'apiVersion': 'v1', 'kind': 'Secret',
            'metadata': {'name': secretaccounts.PREFIX + user,
                         'labels': {secretaccounts.LABEL: 'true'}},
            'data': secretaccounts.data(accountsfile.Account(user, role),
                                        digest)})
    assert status == 201, body


def write_config(path, kubeconfig=None, drivers=True, **extra):
    """Write an emulator config file; return its path.

    sushy-tools' SQLite state (fake driver, indicators, vmedia) goes next
    to it unless given, not to the shared system temporary directory.
    """
    extra.setdefault('SUSHY_EMULATOR_STATE_DIR', os.path.join(
        os.path.dirname(os.path.abspath(path)), 'state'))
    lines = ['import sushy_kubevirt.plugin  # noqa']
    if drivers:
        lines += ["SUSHY_EMULATOR_SYSTEMS_DRIVER = 'kubevirt'",
                  "SUSHY_EMULATOR_VMEDIA_DRIVER = 'kubevirt'"]
    if kubeconfig:
        lines.append('SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG = %r' % kubeconfig)
    lines += ['%s = %r' % item for item in sorted(extra.items())]
    with open(path, 'w') as out:
        out.write('\n'.join(lines) + '\n')
    return str(path)


def wait_until(predicate, timeout=20.0, interval=0.1, what='condition'):
    """Poll ``predicate()`` until it returns a truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError('%s not met within %.0fs' % (what, timeout))
        time.sleep(interval)


def vm(sim, name, namespace='default'):
    """The simulator's stored VirtualMachine (a copy)."""
    rt = sim.store.resource(VM_GROUP, 'virtualmachines')
    return sim.store.get(rt, namespace, name)


def vmi(sim, name, namespace='default'):
    rt = sim.store.resource(VM_GROUP, 'virtualmachineinstances')
    return sim.store.try_get(rt, namespace, name)


def wait_caught_up(sim, url, name, namespace='default', timeout=20.0):
    """The GET of the System at ``url`` once it is the cluster's VM now.

    That is, the emulator renders it from the current VM, VMI and
    DataVolumes and PVCs. Its ETag is the digest of exactly those versions: a
    cache behind the cluster gives another one. Controllers' writes that
    trail a Redfish answer (a VM's status after a start) land at once in
    the simulator but after a watch delivery on a real server.
    """
    def current():
        response = requests.get(url, timeout=10)
        return response if response.headers.get('ETag') == \
            etag(sim, name, namespace) else None
    return wait_until(current, timeout, 0.05, '%s cached as it is' % name)


def etag(sim, name, namespace='default'):
    """The ETag of the System of VM ``name`` as the cluster has it now."""
    dv_rt = sim.store.resource('cdi.kubevirt.io', 'datavolumes')
    pvc_rt = sim.store.resource('', 'persistentvolumeclaims')
    machine = vm(sim, name, namespace)
    dvs = [sim.store.try_get(dv_rt, namespace, v['dataVolume']['name'])
           for v in fields.volumes(machine) if 'dataVolume' in v]
    pvcs = [sim.store.try_get(pvc_rt, namespace, claim)
            for claim in disks.claim_names(machine)]
    return versions.etag(machine, vmi(sim, name, namespace),
                         [obj for obj in dvs + pvcs if obj])


def api_calls(sim, **filters):
    """Requests the simulator served, watches excluded.

    So are the orphan collector's lists of the tray Secrets: it makes
    them in the background on its own schedule
    (:mod:`sushy_kubevirt.drivers.orphans`), whichever request they fall
    beside (one fell among test_auth's 50 refused tokens in CI).
    """
    return [e for e in sim.request_log.entries(**filters)
            if e.get('verb') != 'watch' and not _swept(e)]


def _swept(entry):
    return entry.get('verb') == 'list' and media.LABEL_DEVICE in str(
        (entry.get('query') or {}).get('labelSelector'))


class Process:
    """An emulator subprocess in its own session, stopped on exit.

    It gets SIGTERM when this process dies, of a SIGKILL too
    (:func:`sushy_kubevirt.tethered.popen`): a killed test run leaves
    no emulator behind.
    """

    def __init__(self, argv, port, log_path, env=None):
        self.argv = argv
        self.url = 'http://127.0.0.1:%d' % port
        self.log_path = log_path
        self.env = dict(os.environ, **(env or {}))
        self.proc = None

    def start(self):
        with open(self.log_path, 'wb') as log:
            self.proc = tethered.popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT,
                env=self.env, start_new_session=True)
        return self

    def log(self):
        with open(self.log_path, errors='replace') as log:
            return log.read()

    def wait_ready(self, timeout=READY_TIMEOUT, path='/redfish/v1/Systems'):
        """Wait until ``path`` answers 200 (the root, with auth on)."""
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError('emulator exited with %s:\n%s'
                                     % (self.proc.returncode, self.log()))
            try:
                return requests.get(self.url + path,
                                    timeout=5).status_code == 200
            except requests.RequestException:
                return False
        wait_until(ready, timeout, 0.2, 'emulator ready')
        return self

    def wait_exit(self, timeout=READY_TIMEOUT):
        try:
            return self.proc.wait(timeout)
        finally:
            self.stop()

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(15)


def emulator_process(mode, config, tmp_path, port=None):
    """A :class:`Process` running the emulator the ``mode`` way."""
    port = port or free_port()
    env = {}
    if mode == 'gunicorn':
        argv = [os.path.join(BIN, 'gunicorn'), '-w', '2', '--threads', '2',
                '-b', '127.0.0.1:%d' % port, '--graceful-timeout', '5',
                'sushy_tools.emulator.main:app']
        env['SUSHY_EMULATOR_CONFIG'] = config
    else:
        argv = [os.path.join(BIN, mode), '--config', config,
                '-i', '127.0.0.1', '-p', str(port)]
    return Process(argv, port, str(tmp_path / ('%s.log' % mode)), env)


@contextlib.contextmanager
def replicas(config, tmp_path_factory, count=2):
    """``count`` emulator processes on one config; yields their URLs."""
    processes = []
    try:
        for index in range(count):
            processes.append(emulator_process(
                'sushy-kubevirt-emulator', config,
                tmp_path_factory.mktemp('replica%d' % index)).start())
        yield [process.wait_ready().url for process in processes]
    finally:
        for process in processes:
            process.stop()


@contextlib.contextmanager
def pair(config, tmp_path_factory):
    """Two emulators on one config, in this process and in a subprocess.

    Yields ``(here, other)``: their URLs.
    """
    other = emulator_process('sushy-kubevirt-emulator', config,
                             tmp_path_factory.mktemp('other')).start()
    try:
        with InProcess(config) as here:
            yield here.url, other.wait_ready(path='/redfish/v1/').url
    finally:
        other.stop()


class InProcess:
    """``main.app`` served by a threaded werkzeug server in this process."""

    def __init__(self, config):
        self.config = config
        self._saved = None
        self._server = None
        self._thread = None
        self.url = None

    def start(self):
        self._saved = dict(main.app.config)
        main.app._cache = {}
        main.app.configure(config_file=self.config)
        main.app.systems.check()
        self._server = serving.make_server('127.0.0.1', 0, main.app,
                                           threaded=True)
        self.url = 'http://127.0.0.1:%d' % self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        daemon=True)
        self._thread.start()
        return self

    def wait_synced(self, timeout=60.0):
        """Wait for every informer's first list, as a readiness probe.

        Until an informer's first list ends, its reads go live and would
        count as API calls.
        """
        assert main.app.systems.cluster.wait_for_sync(timeout)
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(10)
        clusters.stop()
        main.app.config.clear()
        main.app.config.update(self._saved)
        main.app._cache = {}


class NoAuth(sushy_auth.AuthBase):
    """sushy without credentials, for an emulator that asks for none.

    sushy's default tries a session, then Basic auth with ``None`` user
    and password (which requests deprecates).
    """

    def _do_authenticate(self):
        pass

    def can_refresh_session(self):
        return False
