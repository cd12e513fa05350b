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

"""The cluster overlay's rights on a real kube-apiserver.

The emulator's ServiceAccount gets exactly what ``overlays/cluster``
binds: the ClusterRole (VMs everywhere, no Secrets) and the Role
``sushy-kubevirt-state`` in its own namespace, no Role in ``default``
(``roles_in=()``). Its config keeps sessions and subscriptions in that
namespace, as the overlay's does. The VMs of ``default`` are served, a
login and a subscription work; a BIOS password, a Secret next to its VM
in ``default``, is refused by the API server and nothing is written.
"""

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.events import receiver

from sushy_kubevirt.controlplane import rbac
from sushy_kubevirt.kubevirt import identity

OWN = rbac.SERVICE_ACCOUNT   # the overlay's namespace: sushy-kubevirt
SESSIONS = '/redfish/v1/SessionService/Sessions'
SUBSCRIPTIONS = '/redfish/v1/EventService/Subscriptions'
pytestmark = [pytest.mark.timeout(600), pytest.mark.skipif(
    not backend.REAL, reason='a real kube-apiserver: '
    'SUSHY_KUBEVIRT_TEST_BACKEND=kube-apiserver (tox -e realkube)')]


@pytest.fixture(scope='module')
def cluster():
    from tests import realbackend
    real = realbackend.Real(vms=2, roles_in=()).start()
    try:
        yield real
    finally:
        real.stop()


@pytest.fixture(scope='module')
def emulator(cluster, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('cluster-overlay')
    auth_file = tmp / 'htpasswd'
    auth_file.write_text('admin:%s\n' % bcrypt.hashpw(
        b'password', bcrypt.gensalt(4)).decode())
    config = harness.write_config(
        tmp / 'emulator.conf', cluster.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(auth_file),
        SUSHY_EMULATOR_KUBEVIRT_SESSION_NAMESPACE=OWN,
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE=OWN)
    with harness.InProcess(config) as server:
        yield server


@pytest.fixture(scope='module')
def session(emulator):
    with requests.Session() as http:
        login = http.post(emulator.url + SESSIONS, json={
            'UserName': 'admin', 'Password': 'password'}, timeout=30)
        assert login.status_code == 201, login.text
        http.headers['X-Auth-Token'] = login.headers['X-Auth-Token']
        yield http


def secrets(cluster, namespace):
    status, body = backend.admin_request(
        cluster, 'GET', '/api/v1/namespaces/%s/secrets' % namespace)
    assert status == 200, body
    return [s['metadata']['name'] for s in body['items']]


def test_serves_every_namespace_and_keeps_its_state_at_home(
        cluster, emulator, session):
    systems = session.get(emulator.url + '/redfish/v1/Systems', timeout=30)
    assert systems.status_code == 200, systems.text
    assert systems.json()['Members@odata.count'] == 2
    with receiver.Receiver() as destination:
        answer = session.post(emulator.url + SUBSCRIPTIONS, json={
            'Destination': destination.url, 'Protocol': 'Redfish',
            'Context': 'overlay'}, timeout=30)
        assert answer.status_code == 201, answer.text
    # The session's and the subscription's Secrets, in the own namespace.
    assert len(secrets(cluster, OWN)) >= 2


def test_no_secret_outside_its_namespace(cluster, emulator, session):
    vm = harness.vm(cluster, 'vm-00000')
    url = '%s/redfish/v1/Systems/%s/Bios/Settings' % (
        emulator.url, identity.firmware_uuid(vm))
    before = secrets(cluster, 'default')
    answer = session.patch(url, json={'Attributes': {
        'SysPassword': 'Hunter2-overlay'}}, timeout=30)
    # A misconfiguration, not the client's fault: named in the message.
    assert answer.status_code == 500, answer.text
    assert ('lacks the RBAC permission to create secrets in namespace '
            'default') in answer.json()['error']['message']
    assert secrets(cluster, 'default') == before
