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

"""The devstack plugin's phases in a stand-in devstack, on the simulator.

``stackenv.sh`` runs stack.sh's phases for a stand-in of Ironic's plugin
(gunicorn unit, emulator config, enroll_nodes' reading of the MACs file)
and for ``devstack/plugin.sh``, with devstack's service functions
modelled (``run_process`` writes a unit and calls ``systemctl``); the
stand-in ``systemctl`` records its calls and really runs the units (the
simulator, the gunicorn emulator), on 127.0.0.1. The checks read the
emulator over Redfish with sushy (as Ironic does) and the cluster with
the official kubernetes client (the independent oracle).
"""

import os
import pathlib
import signal
import subprocess
import sys

from kubernetes import client
from kubernetes import config
import pytest
import requests
import sushy
from tests.functional.emulator import harness

REPO = pathlib.Path(__file__).resolve().parents[3]
STACKENV = pathlib.Path(__file__).with_name('stackenv.sh')
COUNT, CPUS, RAM_MIB, DISK_GIB = 3, 2, 2048, 7
BEGIN = '# BEGIN sushy-kubevirt (devstack plugin)'


def run_stack(root, mode, **env):
    base = {
        'STACK_ROOT': str(root), 'PLUGIN_REPO': str(REPO),
        'STACK_VENV': sys.prefix, 'HOST_IP': '127.0.0.1',
        'SUSHY_KUBEVIRT_TIMEOUT': '60',
    }
    return subprocess.run(
        ['bash', str(STACKENV), mode], env=dict(os.environ, **base, **env),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=180)


def kill_leftovers(root):
    for pid_file in (root / 'run').glob('*.pid'):
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def gone(pid):
    """No such process, or a zombie its new parent has not reaped yet."""
    try:
        with open('/proc/%d/stat' % pid) as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except FileNotFoundError:
        return True


class Stack:
    """What the stacked stand-in left: paths, URLs, enrollment."""

    def __init__(self, root, port, local_conf, output):
        self.root = root
        self.output = output
        self.local_conf = local_conf
        self.url = 'http://127.0.0.1:%d' % port
        self.conf = root / 'etc/ironic/redfish/emulator.conf'
        self.macs_file = root / 'data/ironic/ironic_macs.csv'
        self.kubeconfig = root / 'data/sushy-kubevirt/simulator.kubeconfig'
        self.enrolled = [dict(kv.split('=', 1) for kv in line.split()[1:])
                         for line in (root / 'enrolled').read_text()
                         .splitlines()]
        self.names = [line.split()[0] for line in
                      (root / 'enrolled').read_text().splitlines()]

    def vms(self):
        api = config.new_client_from_config(config_file=str(self.kubeconfig))
        try:
            return {vm['metadata']['name']: vm for vm in
                    client.CustomObjectsApi(api).list_namespaced_custom_object(
                        'kubevirt.io', 'v1', 'default', 'virtualmachines',
                        label_selector='redfish-enabled=true')['items']}
        finally:
            api.close()


@pytest.fixture(scope='module')
def stack(tmp_path_factory):
    root = tmp_path_factory.mktemp('devstack')
    port = harness.free_port()
    local_conf = {
        'IRONIC_REDFISH_EMULATOR_PORT': str(port),
        'SUSHY_KUBEVIRT_SIMULATOR': 'True',
        'SUSHY_KUBEVIRT_SIMULATOR_PORT': str(harness.free_port()),
        'IRONIC_VM_COUNT': str(COUNT), 'IRONIC_VM_SPECS_CPU': str(CPUS),
        'IRONIC_VM_SPECS_RAM': str(RAM_MIB),
        'IRONIC_VM_SPECS_DISK': str(DISK_GIB),
        'SUSHY_KUBEVIRT_VM_NETWORK': 'provisioning',
    }
    try:
        done = run_stack(root, 'stack', **local_conf)
        assert done.returncode == 0, done.stdout
        yield Stack(root, port, local_conf, done.stdout)
    finally:
        run_stack(root, 'unstack', **local_conf)  # unstack.sh reads it too
        kill_leftovers(root)


SIMULATOR = 'devstack@sushy-kubevirt-simulator.service'
EMULATOR = 'devstack@redfish-emulator.service'


def systemctl(root, *args):
    """The stand-in systemctl on the stack's units: (code, output)."""
    done = subprocess.run(
        [str(STACKENV.with_name('bin') / 'systemctl')] + list(args),
        env=dict(os.environ, STACK_ROOT=str(root),
                 SYSTEMD_DIR=str(root / 'systemd')),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=30)
    return done.returncode, done.stdout.strip()


def test_phases_and_services(stack):
    calls = (stack.root / 'calls.log').read_text().splitlines()
    assert ('setup_develop %s/opt/sushy-kubevirt VIRTUAL_ENV=%s'
            % (stack.root, sys.prefix)) in calls
    # run_process: the simulator's unit, enabled and started by systemctl.
    simulator = calls.index('systemctl start %s' % SIMULATOR)
    assert calls.index('systemctl enable %s' % SIMULATOR) < simulator
    assert systemctl(stack.root, 'is-enabled', SIMULATOR) == (0, 'enabled')
    assert systemctl(stack.root, 'is-active', SIMULATOR) == (0, 'active')
    unit = (stack.root / 'systemd' / SIMULATOR).read_text().splitlines()
    [command] = [line for line in unit if line.startswith('ExecStart = ')]
    assert command.split()[2].endswith('/bin/sushy-kubevirt-simulator')
    # Ironic started the emulator with its config; the plugin restarted it
    # with ours, once the simulator ran.
    assert calls.index('systemctl start %s' % EMULATOR) < simulator < \
        calls.index('systemctl restart %s' % EMULATOR)
    assert systemctl(stack.root, 'is-active', EMULATOR) == (0, 'active')
    unit = (stack.root / 'systemd' / EMULATOR).read_text()
    assert ' --workers 2 --threads 2 --timeout 90' in unit
    # Devstack services only in ENABLED_SERVICES, never a unit name.
    [enabled] = [line for line in stack.output.splitlines()
                 if line.startswith('ENABLED_SERVICES=')]
    assert 'sushy-kubevirt-simulator' in enabled.split('=', 1)[1].split(',')
    assert SIMULATOR not in enabled


def test_config_extends_ironics(stack):
    text = stack.conf.read_text()
    assert text.startswith('SUSHY_EMULATOR_BOOT_LOADER_MAP = {')
    assert 'SUSHY_EMULATOR_FEATURE_SET = "full"' in text
    assert text.count(BEGIN) == 1
    settings = {}
    exec(compile(text, str(stack.conf), 'exec'), {}, settings)
    assert settings['SUSHY_EMULATOR_SYSTEMS_DRIVER'] == 'kubevirt'
    assert settings['SUSHY_EMULATOR_VMEDIA_DRIVER'] == 'kubevirt'
    assert settings['SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG'] == str(
        stack.kubeconfig)
    assert settings['SUSHY_EMULATOR_KUBEVIRT_NAMESPACES'] == ['default']
    assert settings['SUSHY_EMULATOR_KUBEVIRT_LABEL_SELECTOR'] == \
        'redfish-enabled=true'


def test_config_rerun_replaces_its_block(stack, tmp_path):
    copy = tmp_path / 'emulator.conf'
    copy.write_text(stack.conf.read_text())
    tool = [sys.executable, str(REPO / 'devstack/tools/emulator_conf.py'),
            str(copy), '--kubeconfig', '/k', '--namespace', 'lab',
            '--vmedia', 'False']
    subprocess.run(tool, check=True, timeout=30, stdout=subprocess.DEVNULL)
    text = copy.read_text()
    assert text.count(BEGIN) == 1 and 'SUSHY_EMULATOR_VMEDIA_DRIVER' not in \
        text and "NAMESPACES = ['lab']" in text
    assert text.startswith('SUSHY_EMULATOR_BOOT_LOADER_MAP = {')


def test_vms_have_the_requested_specs(stack):
    vms = stack.vms()
    assert sorted(vms) == ['node-%d' % i for i in range(COUNT)]
    for name, vm in vms.items():
        domain = vm['spec']['template']['spec']['domain']
        assert domain['cpu']['cores'] * domain['cpu']['sockets'] * \
            domain['cpu']['threads'] == CPUS
        assert domain['memory']['guest'] == '%dMi' % RAM_MIB
        assert 'efi' in domain['firmware']['bootloader']  # IRONIC_BOOT_MODE
        [template] = vm['spec']['dataVolumeTemplates']
        assert template['spec']['storage']['resources']['requests'][
            'storage'] == '%dGi' % DISK_GIB
        nets = vm['spec']['template']['spec']['networks']
        assert [n['multus']['networkName'] for n in nets] == \
            ['provisioning'] * 2  # IRONIC_VM_INTERFACE_COUNT
        assert vm['spec']['runStrategy'] == 'Halted'


def test_enrollment_file_matches_the_vms(stack):
    vms = stack.vms()
    lines = stack.macs_file.read_text().splitlines()
    assert len(lines) == COUNT == len(stack.enrolled)
    all_macs = []
    for name, node in zip(stack.names, stack.enrolled):
        interfaces = vms[name]['spec']['template']['spec']['domain'][
            'devices']['interfaces']
        macs = [i['macAddress'] for i in interfaces]
        assert node['macs'].strip(',').split(',') == macs
        all_macs += macs
    assert len(set(all_macs)) == len(all_macs)


def test_emulator_serves_the_enrolled_nodes(stack):
    """What Ironic would do with each node's driver_info."""
    members = requests.get(stack.url + '/redfish/v1/Systems',
                           timeout=10).json()['Members']
    assert len(members) == COUNT
    for name, node in zip(stack.names, stack.enrolled):
        assert node['redfish_address'] == stack.url
        system_id = node['redfish_system_id']
        assert system_id == '/redfish/v1/Systems/%s' % name
        alias = requests.get(stack.url + system_id, allow_redirects=False,
                             timeout=10)
        assert alias.status_code == 307
        target = alias.headers['Location'].replace(stack.url, '')
        assert {'@odata.id': target} in members
        conn = sushy.Sushy(node['redfish_address'] + '/redfish/v1/',
                           username='admin', password='password',
                           server_side_retries=0)
        system = conn.get_system(system_id)
        assert system.name == name
        assert system.power_state == sushy.SYSTEM_POWER_STATE_OFF
        assert system.memory_summary.size_gib == RAM_MIB // 1024
        assert system.processors.summary.count == CPUS
        macs = sorted(nic.mac_address.lower() for nic in
                      system.ethernet_interfaces.get_members())
        assert macs == sorted(node['macs'].strip(',').split(','))
        sizes = [device.capacity_bytes
                 for storage in system.simple_storage.get_members()
                 for device in storage.devices]
        assert sizes == [DISK_GIB * 1024 ** 3]


def test_boot_device_and_power_through_the_name(stack):
    """Ironic keeps redfish_system_id (the name) for every later call."""
    conn = sushy.Sushy(stack.url + '/redfish/v1/', username='admin',
                       password='password', server_side_retries=0)
    system = conn.get_system('/redfish/v1/Systems/node-1')
    assert system.path == '/redfish/v1/Systems/node-1'
    system.set_system_boot_options(sushy.BOOT_SOURCE_TARGET_PXE)  # PATCH
    interface = stack.vms()['node-1']['spec']['template']['spec'][
        'domain']['devices']['interfaces'][0]
    assert interface['bootOrder'] == 1
    system.reset_system(sushy.RESET_ON)
    harness.wait_until(
        lambda: stack.vms()['node-1']['spec']['runStrategy'] == 'Always',
        20, 0.2, 'node-1 runStrategy Always')


def test_restack_keeps_the_vms(stack, tmp_path):
    macs_file = tmp_path / 'macs.csv'
    tool = [sys.executable, str(REPO / 'devstack/tools/nodes.py'), 'create',
            '--kubeconfig', str(stack.kubeconfig), '--namespace', 'default',
            '--label-selector', 'redfish-enabled=true',
            '--count', str(COUNT), '--cpus', '8', '--network', 'provisioning',
            '--interfaces', '2', '--port', stack.url.rsplit(':', 1)[1],
            '--macs-file', str(macs_file), '--timeout', '20']
    out = subprocess.run(tool, check=True, timeout=60, text=True,
                         stdout=subprocess.PIPE).stdout
    assert out.count('kept existing VirtualMachine') == COUNT
    assert macs_file.read_text() == stack.macs_file.read_text()


def test_unstack_stops_the_services(stack):
    pids = [int(p.read_text()) for p in (stack.root / 'run').glob('*.pid')]
    assert len(pids) == 2
    assert run_stack(stack.root, 'unstack',
                     **stack.local_conf).returncode == 0
    for pid in pids:
        harness.wait_until(lambda: gone(pid), 10, 0.1, 'pid %d gone' % pid)
    # stop_process: stopped and disabled.
    calls = (stack.root / 'calls.log').read_text().splitlines()
    assert calls[-2:] == ['systemctl stop %s' % SIMULATOR,
                          'systemctl disable %s' % SIMULATOR]
    assert systemctl(stack.root, 'is-enabled', SIMULATOR) == (1, 'disabled')
    assert systemctl(stack.root, 'is-active', SIMULATOR)[0] != 0


def test_clean_removes_the_simulator_unit_and_data(stack):
    unit = stack.root / 'systemd' / SIMULATOR
    assert unit.exists() and stack.kubeconfig.exists()
    assert run_stack(stack.root, 'clean', **stack.local_conf).returncode == 0
    assert not unit.exists()
    assert not (stack.root / 'data/sushy-kubevirt').exists()
    assert systemctl(stack.root, 'start', SIMULATOR)[0] == 5  # no unit


@pytest.mark.parametrize('env, message', [
    ({'IRONIC_BAREMETAL_BASIC_OPS': 'True'}, 'libvirt VMs too'),
    ({'IRONIC_DEPLOY_DRIVER': 'ipmi'}, 'IRONIC_DEPLOY_DRIVER=redfish'),
    ({'IRONIC_IS_HARDWARE': 'True'}, 'IRONIC_IS_HARDWARE=False'),
    ({'SUSHY_KUBEVIRT_LABEL_SELECTOR': 'tier in (a,b)',
      'SUSHY_KUBEVIRT_SIMULATOR': 'True',
      'SUSHY_KUBEVIRT_SIMULATOR_PORT': '0'}, 'is not key=value'),
])
def test_bad_settings_stop_the_stack(tmp_path, env, message):
    env.setdefault('IRONIC_REDFISH_EMULATOR_PORT', str(harness.free_port()))
    try:
        done = run_stack(tmp_path, 'stack', **env)
    finally:
        run_stack(tmp_path, 'unstack', **env)
        kill_leftovers(tmp_path)
    assert done.returncode != 0
    assert message in done.stdout, done.stdout
    assert 'stack done' not in done.stdout
