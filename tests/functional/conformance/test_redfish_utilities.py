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
"""DMTF's redfish-utilities scripts against the emulator, Basic auth.

Each script runs as a user would run it (its console script, in a
process of its own) and must exit 0 with what it prints checked; the
state it changed is checked over HTTP.
"""

import os
import shutil
import subprocess
import sys

import pytest
import requests
from tests.functional.conformance import conftest
from tests.functional.emulator import harness
from tests.functional.vmedia.conftest import images  # noqa: F401

from sushy_kubevirt.kubevirt import identity

USER, PASSWORD = 'admin', 'S3cret-password'
AUTH = (USER, PASSWORD)
NAME = 'vm-00000'
#: Seconds a script may take (it walks the service, one call at a time).
TIMEOUT = 120

sim = conftest.sim_fixture(2)


def script(name):
    """The installed ``rf_*`` script ``name`` (a .py console script)."""
    found = shutil.which(name + '.py', path=os.path.dirname(
        sys.executable)) or shutil.which(name + '.py')
    if not found:
        pytest.skip('redfish-utilities is not installed (%s)' % name)
    return found


@pytest.fixture(scope='module')
def emulator(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('rfutil')
    auth_file = harness.write_htpasswd(tmp / 'htpasswd', USER, PASSWORD)
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(auth_file),
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE='default')
    with harness.InProcess(config) as server:
        yield server


@pytest.fixture(scope='module')
def system(sim):
    return identity.firmware_uuid(harness.vm(sim, NAME))


def run(emulator, name, *args, cwd=None):
    """stdout of script ``name`` run with ``args``; it must exit 0."""
    done = subprocess.run(
        [sys.executable, script(name), '-u', USER, '-p', PASSWORD,
         '-r', emulator.url] + list(args), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT, cwd=cwd)
    assert done.returncode == 0, done.stdout
    return done.stdout


def get(emulator, path):
    answer = requests.get(emulator.url + path, auth=AUTH, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_virtual_media_insert_and_eject(
        emulator, system, images):  # noqa: F811
    path = '/redfish/v1/Systems/%s/VirtualMedia/Cd' % system
    assert get(emulator, path)['Image'] is None
    out = run(emulator, 'rf_virtual_media', '-s', system, 'info')
    assert 'Cd' in out
    url = images.add('rfutil.iso')
    run(emulator, 'rf_virtual_media', '-s', system, 'insert', '--image',
        url, '--id', 'Cd')
    assert get(emulator, path)['Image'] == url
    run(emulator, 'rf_virtual_media', '-s', system, 'eject', '--id', 'Cd')
    body = get(emulator, path)
    assert body['Image'] is None and body['Inserted'] is False


def test_boot_override_every_target(emulator, system):
    body = get(emulator, '/redfish/v1/Systems/%s' % system)
    targets = body['Boot']['BootSourceOverrideTarget@Redfish.AllowableValues']
    assert run(emulator, 'rf_boot_override', '-s', system, '--info')
    for target in targets:
        if target in ('UefiHttp', 'UefiTarget'):
            continue   # they need a URI or a device path: below
        run(emulator, 'rf_boot_override', '-s', system, '-t', target)
        boot = get(emulator, '/redfish/v1/Systems/%s' % system)['Boot']
        assert boot['BootSourceOverrideTarget'] == target
    run(emulator, 'rf_boot_override', '-s', system, '-t', 'None')


def manager_id(emulator):
    return get(emulator, '/redfish/v1/Managers')['Members'][0][
        '@odata.id'].rpartition('/')[2]


def test_manager_network(emulator):
    manager = manager_id(emulator)
    out = run(emulator, 'rf_manager_config', '-m', manager, 'getprotocol')
    port = emulator.url.rpartition(':')[2]
    assert [line.split() for line in out.splitlines()
            if line.strip().startswith('HTTP')] == [
        ['HTTP', '|', 'True', '|', port, '|'],
        ['HTTPS', '|', 'False', '|', 'None', '|']]
    out = run(emulator, 'rf_manager_config', '-m', manager, 'getnet')
    assert '127.0.0.1' in out


def test_logs(emulator, system):
    out = run(emulator, 'rf_logs', '-s', system, '-l', 'Log')
    assert 'Timestamp' in out
    manager = manager_id(emulator)
    requests.get(emulator.url + '/redfish/v1/Systems', auth=(USER, 'bad'),
                 timeout=30)
    # The security log's first read waits for its watch's first list (a
    # 503 past 10 s, which a loaded machine can take): awaited first.
    entries = '%s/redfish/v1/Managers/%s/LogServices/SecurityLog/Entries' % (
        emulator.url, manager)
    harness.wait_until(lambda: requests.get(
        entries, auth=(USER, PASSWORD), timeout=30).status_code == 200,
        60, 0.5, 'the security log read')
    out = run(emulator, 'rf_logs', '-m', manager, '-l', 'SecurityLog')
    assert 'LoginFailed' in out
    run(emulator, 'rf_logs', '-m', manager, '-l', 'SecurityLog', '--clear')
    out = run(emulator, 'rf_logs', '-m', manager, '-l', 'SecurityLog')
    assert 'LoginFailed' not in out and 'RedfishLogCleared' in out


def test_accounts_list(emulator):
    out = run(emulator, 'rf_accounts')
    assert USER in out


def test_power_reset(emulator, system):
    path = '/redfish/v1/Systems/%s' % system
    run(emulator, 'rf_power_reset', '-s', system, '--info')
    run(emulator, 'rf_power_reset', '-s', system, '-t', 'ForceOff')
    harness.wait_until(lambda: get(emulator, path)['PowerState'] == 'Off',
                       what='the System off')
    run(emulator, 'rf_power_reset', '-s', system, '-t', 'On')
    harness.wait_until(lambda: get(emulator, path)['PowerState'] == 'On',
                       what='the System on')


def test_bios_settings(emulator, system):
    out = run(emulator, 'rf_bios_settings', '-s', system)
    assert 'BootMode' in out or 'Attribute' in out


def test_event_service(emulator):
    out = run(emulator, 'rf_event_service', 'info')
    assert 'Service Info' in out or 'Subscriptions' in out
    run(emulator, 'rf_event_service', 'subscribe', '--destination',
        'http://127.0.0.1:9/events', '--format', 'Event')
    members = get(emulator, '/redfish/v1/EventService/Subscriptions')[
        'Members']
    assert members
    for member in members:
        run(emulator, 'rf_event_service', 'unsubscribe', '--id',
            member['@odata.id'].rpartition('/')[2])
    assert not get(emulator, '/redfish/v1/EventService/Subscriptions')[
        'Members']


def test_sys_inventory(emulator, tmp_path):
    out = run(emulator, 'rf_sys_inventory', '--details')
    chassis = get(emulator, '/redfish/v1/Chassis')['Members']
    assert 'Inventory' in out
    assert all(c['@odata.id'].rpartition('/')[2][:3] in out
               for c in chassis)
    run(emulator, 'rf_sys_inventory', '--write', 'inventory', cwd=tmp_path)
    assert (tmp_path / 'inventory.xlsx').stat().st_size
