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

"""Two teams and three roles on one emulator: accounts, a simulator with
two namespaces, the EventService on."""

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

PASSWORD = 'S3cret-password'
#: user -> (role, namespaces); ``stranger`` has a password and no role,
#: nor has ``ci`` until a test gives it one.
ACCOUNTS = {
    'admin': ('Administrator', None),
    'op-a': ('Operator', ['ns-000']),
    'ro-a': ('ReadOnly', ['ns-000']),
    'op-b': ('Operator', ['ns-001']),
}
USERS = tuple(ACCOUNTS) + ('stranger', 'ci')
OWN, FOREIGN = 'ns-000', 'ns-001'
FAST = {'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1}


def accounts_yaml(accounts):
    lines = ['accounts:']
    for user, (role, namespaces) in accounts.items():
        lines.append('  %s:' % user)
        lines.append('    role: %s' % role)
        if namespaces:
            lines.append('    namespaces: [%s]' % ', '.join(namespaces))
    return '\n'.join(lines) + '\n'


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=6, namespaces=2, stage_delays=FAST)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def accounts_file(tmp_path_factory):
    path = tmp_path_factory.mktemp('accounts') / 'accounts.yaml'
    path.write_text(accounts_yaml(ACCOUNTS))
    return path


@pytest.fixture(scope='module')
def emulator(sim, accounts_file, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('tenancy')
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    htpasswd = tmp / 'htpasswd'
    htpasswd.write_text(''.join('%s:%s\n' % (u, digest) for u in USERS))
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(htpasswd),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE=str(accounts_file),
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE='default',
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_RETRY_INTERVAL=0,
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD=0,
        SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_BURST=100000,
        SUSHY_EMULATOR_KUBEVIRT_AUTH_FAILURE_RATE=100000)
    with harness.InProcess(config) as server:
        yield server


class Client:
    """Requests as one user, with Basic credentials."""

    def __init__(self, url, user):
        self.url, self.user = url, user
        self.session = requests.Session()
        self.session.auth = (user, PASSWORD)

    def request(self, method, path, **kwargs):
        kwargs.setdefault('timeout', 30)
        kwargs.setdefault('allow_redirects', False)
        return self.session.request(method, self.url + path, **kwargs)

    def get(self, path):
        return self.request('GET', path)


@pytest.fixture(scope='module')
def clients(emulator):
    return {user: Client(emulator.url, user) for user in USERS}


@pytest.fixture(scope='module')
def systems(sim):
    """namespace -> the System paths of its VMs."""
    found = {}
    for vm in sim.store.list(sim.store.resource('kubevirt.io',
                                                'virtualmachines'))[0]:
        found.setdefault(vm['metadata']['namespace'], []).append(
            '/redfish/v1/Systems/%s' % identity.firmware_uuid(vm))
    return {ns: sorted(paths) for ns, paths in found.items()}
