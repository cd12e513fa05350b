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

"""Kubernetes failures over Redfish HTTP (issues 12 item 4, 14 item 6).

An unreachable, throttling or unavailable API server answers 503; a
refused request answers 500 naming the missing RBAC permission; a
namespace the cache cannot read (revoked, missing) answers 503 with the
reason instead of a frozen or empty 200, and so does a write to a
namespace made forbidden; the Systems collection lists the other
namespaces and names the one left out. No body names the API server's
address.
"""

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

NAMESPACES = ('ns-000', 'ns-001')


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=4, namespaces=2, stage_delays={
        'Scheduling': 0.05, 'Scheduled': 0.05, 'Running': 0.1})
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def server(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('emulator')
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_NAMESPACES=list(NAMESPACES))
    with harness.InProcess(config) as emulator:
        yield emulator


@pytest.fixture(autouse=True)
def clean(sim):
    yield
    sim.faults.clear()
    sim.authz.clear()


def system(sim, server, name, namespace):
    uuid = identity.firmware_uuid(harness.vm(sim, name, namespace))
    return '%s/redfish/v1/Systems/%s' % (server.url, uuid)


def message(response):
    return response.json()['error']['message']


def no_address(sim, response):
    for address in ('127.0.0.1', ':%d' % sim.port, 'http://'):
        assert address not in response.text, response.text


def unavailable(sim, response, retry_after='5'):
    """A Redfish 503 with Retry-After, naming no internal address."""
    assert response.status_code == 503, response.text
    assert response.headers['Retry-After'] == retry_after
    assert response.json()['error']['code'] == \
        'Base.1.16.ServiceTemporarilyUnavailable'
    no_address(sim, response)


def reset(url, kind='On'):
    return requests.post(url + '/Actions/ComputerSystem.Reset',
                         json={'ResetType': kind}, timeout=30)


def answered(url, code):
    """``[response]`` if GET ``url`` answers ``code``, else None.

    (A Response with an error status is false.) Not listening yet, or no
    answer within 10 s (a gunicorn worker takes no request before its
    caches synced or its boot wait ended; on a loaded machine it may be
    slow to get there): None.
    """
    try:
        response = requests.get(url, timeout=10)
    except (requests.ConnectionError, requests.Timeout):
        return None
    return [response] if response.status_code == code else None


def ready(server):
    return requests.get(server.url + '/redfish/v1/Systems',
                        timeout=10).status_code == 200


def forbid(sim, namespace, undo=False):
    """Forbid (or allow again) every request in ``namespace``.

    Through the simulator's control API, over HTTP.
    """
    answer = requests.post(
        '%s/namespaces/%s/%s' % (sim.start_control(), namespace,
                                 'allow' if undo else 'forbid'),
        headers={'Authorization': 'Bearer %s' % sim.token}, timeout=10)
    assert answer.status_code == 200, answer.text


def members(server):
    """The Systems collection: ``(status, body)``."""
    answer = requests.get(server.url + '/redfish/v1/Systems', timeout=10)
    return answer.status_code, answer.json()


def metrics(server):
    answer = requests.get(server.url + '/metrics', timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.text


def test_an_unreachable_api_server_before_sync_answers_503(sim, server):
    # First in this module: no request has started the watch cache yet.
    back = sim.restart_api(down_seconds=3)
    response = requests.get(server.url + '/redfish/v1/Systems', timeout=30)
    unavailable(sim, response)
    assert 'The Kubernetes API server cannot be reached' in \
        message(response)
    assert back.wait(60)
    harness.wait_until(lambda: ready(server), what='served')


def test_writes_while_the_api_server_is_down_answer_503(sim, server):
    url = system(sim, server, 'vm-00000', 'ns-000')
    assert requests.get(url, timeout=10).status_code == 200
    back = sim.restart_api(down_seconds=3)
    response = reset(url)
    unavailable(sim, response)
    assert 'The Kubernetes API server cannot be reached' in \
        message(response)
    assert back.wait(60)
    harness.wait_until(lambda: ready(server), what='served again')


@pytest.mark.parametrize('code, expected', [
    (503, 'The Kubernetes API server is unavailable'),
    (429, 'The Kubernetes API server is throttling the emulator'),
])
def test_api_throttling_or_unavailable_answers_503(sim, server, code,
                                                   expected):
    url = system(sim, server, 'vm-00002', 'ns-000')
    sim.faults.status(code, retry_after=1, method='PUT', path='/start$',
                      times=None)
    response = reset(url)
    unavailable(sim, response, retry_after='1')
    assert expected in message(response)
    vm = harness.vm(sim, 'vm-00002', 'ns-000')
    assert vm['spec']['runStrategy'] == 'Halted'


def test_a_refused_write_names_the_missing_permission(sim, server):
    url = system(sim, server, 'vm-00002', 'ns-000')
    sim.authz.deny(verb='patch', resource='virtualmachines')
    response = requests.patch(url, json={'Boot': {
        'BootSourceOverrideTarget': 'Pxe',
        'BootSourceOverrideEnabled': 'Continuous'}}, timeout=30)
    assert response.status_code == 500, response.text
    assert response.json()['error']['code'] == 'Base.1.16.InternalError'
    assert "the emulator's Kubernetes service account lacks the RBAC " \
        'permission to patch virtualmachines.kubevirt.io in namespace ' \
        'ns-000' in message(response)
    no_address(sim, response)


def test_a_namespace_revoked_at_runtime_answers_503(sim, server):
    url = system(sim, server, 'vm-00001', 'ns-001')
    other = system(sim, server, 'vm-00000', 'ns-000')
    # After an earlier test's restart, a real kube-apiserver refuses
    # watches for a few seconds, until its authorizer has listed the RBAC.
    harness.wait_until(lambda: answered(url, 200), what='served')
    sim.authz.deny(namespace='ns-001', resource='virtualmachines')
    assert sim.restart_api().wait(5)    # watches are authorized at start
    response = harness.wait_until(lambda: answered(url, 503),
                                  what='503')[0]
    assert message(response) == (
        "The systems in namespace ns-001 cannot be read: the emulator's "
        'Kubernetes service account lacks the RBAC permission to list '
        'virtualmachines.kubevirt.io in namespace ns-001') or \
        'permission to watch virtualmachines' in message(response)
    unavailable(sim, response)
    assert requests.get(other, timeout=10).status_code == 200
    sim.authz.clear()
    harness.wait_until(lambda: answered(url, 200), what='served again')


WRITES = {
    'patch': lambda url: requests.patch(url, json={'Boot': {
        'BootSourceOverrideTarget': 'Pxe',
        'BootSourceOverrideEnabled': 'Continuous'}}, timeout=30),
    'reset': lambda url: reset(url, 'On'),
}


@pytest.mark.parametrize('write', sorted(WRITES))
def test_a_write_to_a_namespace_made_forbidden_answers_503(sim, server,
                                                           write):
    """The cache still serves the VM; its write is refused (403)."""
    url = system(sim, server, 'vm-00003', 'ns-001')
    harness.wait_until(lambda: answered(url, 200), what='served')
    forbid(sim, 'ns-001')
    try:
        response = WRITES[write](url)
        unavailable(sim, response)
        assert message(response).startswith(
            "The systems in namespace ns-001 cannot be read: the "
            "emulator's Kubernetes service account lacks the RBAC "
            'permission to '), message(response)
        assert 'in namespace ns-001' in message(response)
    finally:
        forbid(sim, 'ns-001', undo=True)
    if write == 'reset':
        assert harness.vm(sim, 'vm-00003', 'ns-001')['spec'][
            'runStrategy'] == 'Halted'
    else:
        assert WRITES[write](url).status_code == 204


def test_one_forbidden_namespace_leaves_the_collection_served(sim, server):
    healthy = sorted(system(sim, server, name, 'ns-000').rpartition('/')[2]
                     for name in ('vm-00000', 'vm-00002'))
    url = system(sim, server, 'vm-00001', 'ns-001')
    harness.wait_until(lambda: answered(url, 200), what='served')
    forbid(sim, 'ns-001')
    try:
        assert sim.restart_api().wait(5)    # watches are authorized at start
        harness.wait_until(lambda: answered(url, 503), what='503')
        # Each informer of ns-001 sees the refusal at its own re-watch.
        status, body = harness.wait_until(lambda: (lambda answer: answer if (
            answer[0] != 200 or answer[1]['Members@odata.count'] < 4)
            else None)(members(server)), what='ns-001 left out')
        assert status == 200, body
        assert sorted(m['@odata.id'].rpartition('/')[2]
                      for m in body['Members']) == healthy
        assert body['Members@odata.count'] == 2
        info, = body['@Message.ExtendedInfo']
        assert info['MessageId'] == 'Base.1.16.OperationFailed'
        assert info['MessageSeverity'] == 'Warning'
        assert 'The systems in namespace ns-001 are not listed' in \
            info['Resolution']
        no_address(sim, requests.get(server.url + '/redfish/v1/Systems',
                                     timeout=10))
        text = metrics(server)
        assert 'sushy_kubevirt_namespace_unreadable{namespace="ns-001",' \
            'reason="forbidden"} 1' in text, text
        assert 'sushy_kubevirt_namespace_unreadable{namespace="ns-000",' \
            'reason=""} 0' in text, text
    finally:
        forbid(sim, 'ns-001', undo=True)
    status, body = harness.wait_until(
        lambda: (lambda answer: answer if answer[0] == 200 and
                 answer[1]['Members@odata.count'] == 4 else None)(
            members(server)), what='every namespace listed again')
    assert '@Message.ExtendedInfo' not in body
    harness.wait_until(lambda: 'namespace="ns-001",reason=""} 0' in
                       metrics(server), what='ns-001 readable in /metrics')


def test_a_missing_namespace_under_gunicorn_answers_503_and_logs(
        sim, tmp_path):
    # gunicorn runs no start-up check: each worker must tell by itself.
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_NAMESPACES=['ns-000', 'nope'])
    process = harness.emulator_process('gunicorn', config, tmp_path)
    process.start()
    try:
        # The collection lists ns-000 and names the missing namespace.
        response = harness.wait_until(lambda: (lambda r: r if r and (
            '@Message.ExtendedInfo' in r[0].json()) else None)(answered(
                process.url + '/redfish/v1/Systems', 200)), 60,
            what='the missing namespace named')[0]
        assert response.json()['Members@odata.count'] == 2
        assert response.json()['@Message.ExtendedInfo'][0][
            'Resolution'].startswith(
                'The systems in namespace nope are not listed: the '
                'namespace does not exist '
                '(SUSHY_EMULATOR_KUBEVIRT_NAMESPACES)')
        alias = requests.get(process.url + '/redfish/v1/Systems/nope.vm-1',
                             timeout=10)
        unavailable(sim, alias)
        assert message(alias) == (
            'The systems in namespace nope cannot be read: the namespace '
            'does not exist (SUSHY_EMULATOR_KUBEVIRT_NAMESPACES)')
        harness.wait_until(lambda: 'Namespace nope does not exist' in
                           process.log(), what='logged')
    finally:
        process.stop()
