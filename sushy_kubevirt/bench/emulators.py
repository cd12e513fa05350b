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

"""Emulator processes: this driver or sushy-tools' fake driver, two servers.

``gunicorn`` mirrors Ironic's devstack (2 workers x 2 threads);
``devserver`` (a name kept for the history of figures: it was Flask's
threaded development server) is the server of ``sushy-kubevirt-emulator``,
waitress, on every side: the console script for this driver,
:mod:`.waitressed` for the fake driver, with as many threads.
"""

import functools
import os
import pprint
import signal
import subprocess
import sys
import uuid

from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import waitressed
from sushy_kubevirt import files

SERVERS = ('gunicorn', 'devserver')
WORKERS = 2
THREADS = 2
_FAKE_NS = uuid.UUID('6a1e9a4e-0a57-4a43-9d54-7a0b5a3c2f10')


def fake_systems(count):
    """``SUSHY_EMULATOR_FAKE_SYSTEMS`` entries for ``count`` fake nodes."""
    return [{'uuid': str(uuid.uuid5(_FAKE_NS, str(i))),
             'name': 'fake-%05d' % i,
             'power_state': 'Off',
             'nics': [{'mac': '52:54:00:%02x:%02x:%02x' % (
                 i >> 16 & 255, i >> 8 & 255, i & 255)}]}
            for i in range(count)]


def _settings(port, driver, systems, state_dir, kubeconfig, namespaces,
              vmedia, extra):
    settings = {'SUSHY_EMULATOR_LISTEN_IP': '127.0.0.1',
                'SUSHY_EMULATOR_LISTEN_PORT': port,
                'SUSHY_EMULATOR_STATE_DIR': state_dir}
    if driver == 'fake':
        settings.update(SUSHY_EMULATOR_FAKE_DRIVER=True,
                        SUSHY_EMULATOR_FAKE_SYSTEMS=fake_systems(systems))
    else:
        settings.update(SUSHY_EMULATOR_SYSTEMS_DRIVER='kubevirt',
                        SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG=kubeconfig)
        if vmedia:
            settings['SUSHY_EMULATOR_VMEDIA_DRIVER'] = 'kubevirt'
        if namespaces:
            settings['SUSHY_EMULATOR_KUBEVIRT_NAMESPACES'] = list(namespaces)
    settings.update(extra or {})
    return settings


def write_config(path, port, driver, systems=0, kubeconfig=None,
                 namespaces=None, vmedia=True, extra=None):
    """Write an emulator config file; ``driver`` is 'fake' or 'kubevirt'."""
    state_dir = os.path.join(os.path.dirname(path), 'state-%d' % port)
    os.makedirs(state_dir, exist_ok=True)
    settings = _settings(port, driver, systems, state_dir, kubeconfig,
                         namespaces, vmedia, extra)
    lines = ['import sushy_kubevirt.plugin  # noqa'] if driver != 'fake' \
        else []
    lines += ['%s = %s' % (key, pprint.pformat(value, width=200))
              for key, value in settings.items()]
    files.replace(path, '\n'.join(lines) + '\n')
    return path


def _script(name):
    return os.path.join(os.path.dirname(sys.executable), name)


@functools.lru_cache(maxsize=1)
def _no_control_socket():
    """``--no-control-socket`` where gunicorn has it (not at its floor)."""
    out = subprocess.run([sys.executable, '-m', 'gunicorn', '--help'],
                         capture_output=True, text=True, timeout=60).stdout
    return ['--no-control-socket'] if '--no-control-socket' in out else []


def argv(server, driver, config_path, port, workers=WORKERS):
    """The command line starting one emulator (``workers``: gunicorn's)."""
    if server == 'gunicorn':
        return [sys.executable, '-m', 'gunicorn',
                '--bind', '127.0.0.1:%d' % port,
                '--workers', str(workers), '--threads', str(THREADS),
                '--timeout', '120', '--graceful-timeout', '5'] + \
            _no_control_socket() + ['sushy_tools.emulator.main:app']
    if driver == 'fake':
        return [sys.executable, '-m', waitressed.__name__, config_path,
                str(port)]
    return [_script('sushy-kubevirt-emulator'), '--config', config_path,
            '--threads', str(waitressed.THREADS)]


class Emulator:
    """One running emulator process (and its workers)."""

    def __init__(self, server, driver, config_path, port, log_path,
                 wrapper=(), workers=WORKERS, cpus=None):
        """``cpus``: pin the server and its workers to these CPUs."""
        self.server, self.driver, self.port = server, driver, port
        self.log_path = log_path
        self.profiled = bool(wrapper)
        self.proc = procs.spawn(
            list(wrapper) + argv(server, driver, config_path, port,
                                 workers),
            log_path, env={'SUSHY_EMULATOR_CONFIG': config_path,
                           'PYTHONHASHSEED': '0'}, cpus=cpus)

    def wait_ready(self, deadline_s=60.0):
        procs.wait_http(self.proc, self.port, '/redfish/v1/', deadline_s,
                        self.log_path)

    def rss_kb(self):
        """Total VmRSS of the server and its workers, in kB."""
        return sum(procs.rss_kb(self.proc.pid).values())

    def peak_rss_kb(self):
        """Total VmHWM (peak RSS) of the server and its workers, in kB."""
        return sum(procs.rss_kb(self.proc.pid, 'VmHWM:').values())

    def cpu_s(self):
        """CPU seconds used by the server and its workers so far."""
        return procs.cpu_s(self.proc.pid)

    def stop(self):
        if self.profiled and self.proc.poll() is None:
            # py-spy writes its output when interrupted, then ends the child.
            os.kill(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        procs.stop(self.proc)
