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

"""What DMTF's Protocol Validator and Use Case Checkers ask, over HTTP.

A one-time boot override reads ``Disabled`` once a boot used it (kept on
the VM, so every process agrees); ``None``/``Disabled`` ends an override;
a login through ``Sessions/Members``; the SessionService needs
credentials; every ManagerAccount GET has an ETag; a PATCH of OData
annotations only is a 400 ``NoOperation``.
"""

import pytest
import requests
import sushy
from tests.functional.conformance import conftest
from tests.functional.conformance import test_ironic_flows as flows
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import boot

sim = conftest.sim_fixture(4)

PXE, HDD = sushy.BOOT_SOURCE_TARGET_PXE, sushy.BOOT_SOURCE_TARGET_HDD
ONCE, DISABLED = flows.ONCE, flows.DISABLED
USER, PASSWORD = 'admin', 'Admin-password-1'
SESSIONS = '/redfish/v1/SessionService/Sessions'
ACCOUNTS = '/redfish/v1/AccountService/Accounts'


def _patch_boot(url, machine, target, enabled):
    return requests.patch(url + machine.path, json={'Boot': {
        'BootSourceOverrideTarget': target,
        'BootSourceOverrideEnabled': enabled}}, timeout=30)


def _orders(sim, machine):
    return flows._orders(flows._devices(sim, machine))


def _error(response, status, message_id):
    assert response.status_code == status, response.text
    assert response.json()['error']['@Message.ExtendedInfo'][0][
        'MessageId'].endswith('.' + message_id), response.text


def test_a_used_one_time_boot_reads_disabled(sim, emulator, ironic,
                                             machine):
    flows.set_power(ironic, machine, sushy.RESET_ON, flows.ON)
    flows.set_boot_device(ironic, machine, PXE, False)
    assert flows._boot(ironic, machine) == (PXE, ONCE)
    before = flows._vmi_uid(sim, machine)
    ironic.get_system(flows._path(machine)).reset_system(
        sushy.RESET_FORCE_RESTART)
    harness.wait_until(
        lambda: flows._boot(ironic, machine) == (HDD, DISABLED), 20, 0.1,
        'the one-time boot used')
    assert flows._vmi_uid(sim, machine) != before
    assert _orders(sim, machine) == {'disk': 1, 'nic': 2}
    # Kept on the VM: a new process reads it too.
    assert harness.vm(sim, machine.name)['metadata']['annotations'][
        boot.DISABLED_ANNOTATION] == 'Disabled'
    # The next override replaces it.
    flows.set_boot_device(ironic, machine, PXE, True)
    assert flows._boot(ironic, machine) == (PXE, flows.CONTINUOUS)
    assert boot.DISABLED_ANNOTATION not in harness.vm(
        sim, machine.name)['metadata']['annotations']
    flows.set_power(ironic, machine, sushy.RESET_FORCE_OFF, flows.OFF)


def test_target_none_disables_the_override(sim, emulator, ironic, machine):
    flows.set_boot_device(ironic, machine, PXE, False)
    assert _orders(sim, machine) == {'disk': 2, 'nic': 1}
    response = _patch_boot(emulator.url, machine, 'None', 'Disabled')
    assert response.status_code == 204, response.text
    # The pending Once is cancelled: the order it saved is back.
    assert flows._boot(ironic, machine) == (HDD, DISABLED)
    assert _orders(sim, machine) == {'disk': 1, 'nic': 2}
    assert _patch_boot(emulator.url, machine, 'None',
                       'Disabled').status_code == 204
    vm = harness.vm(sim, machine.name)
    for enabled in ('Once', 'Continuous'):
        _error(_patch_boot(emulator.url, machine, 'None', enabled), 400,
               'PropertyValueConflict')
    _error(_patch_boot(emulator.url, machine, 'Pxe', 'Disabled'), 400,
           'PropertyValueConflict')
    assert harness.vm(sim, machine.name) == vm


@pytest.fixture
def protected(sim, tmp_path):
    """An emulator with an htpasswd file (accounts read-only).

    In this process, as the module's ``emulator``: one at a time.
    """
    tmp = tmp_path
    htpasswd = harness.write_htpasswd(tmp / 'htpasswd', USER, PASSWORD)
    with harness.InProcess(harness.write_config(
            tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
            SUSHY_EMULATOR_AUTH_FILE=str(htpasswd))) as server:
        yield server.url


def test_login_through_members_and_an_authenticated_session_service(
        protected):
    _error(requests.get(protected + '/redfish/v1/SessionService',
                        timeout=30), 401, 'NoValidSession')
    service = requests.get(protected + '/redfish/v1/SessionService',
                           auth=(USER, PASSWORD), timeout=30)
    assert service.status_code == 200
    _error(requests.post(protected + SESSIONS + '/Members', json={
        'UserName': USER, 'Password': 'wrong'}, timeout=30), 401,
        'NoValidSession')
    login = requests.post(protected + SESSIONS + '/Members', json={
        'UserName': USER, 'Password': PASSWORD}, timeout=30)
    assert login.status_code == 201, login.text
    token = {'X-Auth-Token': login.headers['X-Auth-Token']}
    location = login.headers['Location']
    assert location.startswith(SESSIONS + '/')
    assert login.json()['@odata.id'] == location
    assert requests.get(protected + '/redfish/v1/Systems', headers=token,
                        timeout=30).status_code == 200
    assert requests.delete(protected + location, headers=token,
                           timeout=30).status_code == 204
    _error(requests.get(protected + '/redfish/v1/Systems', headers=token,
                        timeout=30), 401, 'NoValidSession')


def test_a_read_only_account_has_an_etag(protected):
    def get():
        response = requests.get(protected + ACCOUNTS + '/' + USER,
                                auth=(USER, PASSWORD), timeout=30)
        assert response.status_code == 200
        return response.headers['ETag']
    etag = get()
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 2
    assert get() == etag


def test_a_patch_of_odata_annotations_only_is_no_operation(sim,
                                                           tmp_path):
    harness.create_account_secret(sim, USER, PASSWORD)
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE='secrets')
    with harness.InProcess(config) as server:
        url = server.url + ACCOUNTS
        made = requests.post(url, json={
            'UserName': 'ops', 'Password': 'Ops-password-1',
            'RoleId': 'ReadOnly'}, auth=(USER, PASSWORD), timeout=30)
        assert made.status_code == 201, made.text
        etag = made.headers['ETag']
        _error(requests.patch(url + '/ops', json={
            '@odata.id': ACCOUNTS + '/ops/'}, auth=(USER, PASSWORD),
            timeout=30), 400, 'NoOperation')
        assert requests.get(url + '/ops', auth=(USER, PASSWORD),
                            timeout=30).headers['ETag'] == etag
        changed = requests.patch(url + '/ops', json={
            '@odata.id': ACCOUNTS + '/ops', 'RoleId': 'Operator'},
            auth=(USER, PASSWORD), timeout=30)
        assert changed.status_code == 200, changed.text
        assert changed.json()['RoleId'] == 'Operator'
