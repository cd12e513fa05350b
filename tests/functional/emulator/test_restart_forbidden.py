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

"""A restarted kube-apiserver answers 403 until its RBAC caches have synced.

For a few seconds after a restart, kube-apiserver answers every request
403, its message naming the bound ClusterRoles - the bootstrap
``system:discovery`` and ``system:basic-user`` too - "not found" (the
authorizer has not listed them yet); a real revocation carries no such
list. Such a 403 is the server starting, not a revoked permission: reads
keep answering from the synced cache, and a write answers 503 with
``Retry-After`` (Ironic retries it), not 500 blaming a permission nobody
revoked. Seen on the real control plane; reproduced here with the
simulator's fault injection (403 with kube-apiserver's start-up message
right after a restart).
"""

import contextlib

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

UNREADY = (
    'virtualmachines.kubevirt.io is forbidden: User "admin" cannot watch '
    'resource "virtualmachines" in API group "kubevirt.io" at the cluster '
    'scope: RBAC: [clusterrole.rbac.authorization.k8s.io '
    '"system:discovery" not found, clusterrole.rbac.authorization.k8s.io '
    '"system:basic-user" not found, clusterrole.rbac.authorization.k8s.io '
    '"sushy-kubevirt" not found]')
#: Before it has even listed the bindings, its 403 names nothing.
UNLISTED = ('virtualmachines.kubevirt.io is forbidden: User "admin" cannot '
            'watch resource "virtualmachines" in API group "kubevirt.io" '
            'at the cluster scope')


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=2, namespaces=2)
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def server(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('emulator')
    # Cluster-wide, as Ironic's devstack and bench.backends run it.
    config = harness.write_config(tmp / 'emulator.conf',
                                  sim.write_kubeconfig(str(tmp / 'kc')))
    with harness.InProcess(config) as emulator:
        yield emulator


@pytest.fixture
def url(sim, server):
    uuid = identity.firmware_uuid(harness.vm(sim, 'vm-00000', 'ns-000'))
    url = '%s/redfish/v1/Systems/%s' % (server.url, uuid)
    harness.wait_until(
        lambda: requests.get(url, timeout=10).status_code == 200,
        what='served from a synced cache')
    return url


@contextlib.contextmanager
def _restarted_refusing(sim, message):
    """Restart the API server; it answers 403 ``message`` for a while.

    As if its RBAC were unsynced, until the emulator's re-watch of its VMs
    has been refused once.
    """
    sim.faults.status(403, message=message, times=None)
    try:
        assert sim.restart_api(down_seconds=0.5).wait(5)
        harness.wait_until(
            lambda: sim.request_log.count(
                verb='watch', resource='virtualmachines', status=403),
            timeout=30, interval=0.05, what='a refused re-watch')
        yield
    finally:
        sim.faults.clear()


@pytest.mark.parametrize('message', [UNREADY, UNLISTED],
                         ids=['roles', 'bare'])
def test_reads_keep_answering_from_the_cache(sim, url, message):
    with _restarted_refusing(sim, message):
        response = requests.get(url, timeout=10)
    assert response.status_code == 200, response.text


def test_a_reset_answers_503_with_retry_after_not_500(sim, url):
    """The 403 names the bootstrap roles "not found": the server starts."""
    with _restarted_refusing(sim, UNREADY):
        response = requests.post(url + '/Actions/ComputerSystem.Reset',
                                 json={'ResetType': 'On'}, timeout=30)
    assert response.status_code == 503, response.text
    assert response.headers.get('Retry-After')
