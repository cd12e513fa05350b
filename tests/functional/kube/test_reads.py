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

"""Initial sync, cache reads, the PR #32 synced rule, lifecycle."""

import socket
import threading
import time

import pytest
from tests import backend
from tests.functional.kube.conftest import kube_calls
from tests.functional.kube.conftest import our_threads
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt import config
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube.cluster import Cluster
from sushy_kubevirt.simulator import kubeconfig
from sushy_kubevirt.simulator import objects

GROUP, VERSION = 'kubevirt.io', 'v1'


def test_construction_is_lazy(sim, cluster_factory):
    before = threading.active_count()
    cluster = cluster_factory(sim)
    assert threading.active_count() == before
    assert our_threads() == []
    assert sim.request_log.entries() == []
    cluster.list_vms()
    assert our_threads() != []


def test_initial_sync_then_reads_make_no_call(sim, cluster):
    vms = cluster.list_vms()
    assert sorted(v['metadata']['name'] for v in vms) == [
        'vm-%05d' % i for i in range(4)]
    assert all('managedFields' not in v['metadata'] for v in vms)
    uuid = lookup.INDEXERS['uuid'](vms[0])[0]
    sim.request_log.clear()
    for _ in range(20):
        assert cluster.get_vm('default', 'vm-00001')['metadata']['name'] \
            == 'vm-00001'
        assert [v['metadata']['name']
                for v in cluster.find_vms('uuid', uuid)] == \
            [vms[0]['metadata']['name']]
        assert len(cluster.find_vms('name', 'vm-00002')) == 1
        assert len(cluster.list_vms()) == 4
        assert cluster.get_vmi('default', 'vm-00001') is None
    assert kube_calls(sim, resource=lambda r: True) == []
    assert cluster.accounting.cache_reads('get', 'virtualmachines') == 20
    assert cluster.accounting.cache_reads('list', 'virtualmachines') == 1 + 60


def test_synced_not_found_is_final(sim, cluster):
    sim.request_log.clear()
    assert cluster.get_vm('default', 'no-such-vm') is None
    assert cluster.find_vms('uuid', 'no-such-uuid') == []
    assert cluster.get_vm('not-served', 'vm-00000') is None
    assert kube_calls(sim, resource=lambda r: True) == []


@backend.simulator_only('faults')
def test_unsynced_reads_go_live_and_are_counted(sim, cluster_factory):
    rule = sim.faults.status(500, method='GET', path='/virtualmachines$',
                             times=None)
    cluster = cluster_factory(sim)
    vm = cluster.get_vm('default', 'vm-00000')
    assert vm['metadata']['name'] == 'vm-00000'
    assert 'managedFields' not in vm['metadata']
    assert cluster.get_vm('default', 'missing') is None
    assert cluster.accounting.live_calls('get', 'virtualmachines') == 2
    assert cluster.accounting.cache_reads() == 0
    assert len(kube_calls(sim, 'get', name='vm-00000')) == 1
    sim.faults.remove(rule)
    assert cluster.wait_for_sync(10)
    sim.request_log.clear()
    assert cluster.get_vm('default', 'vm-00000') is not None
    assert kube_calls(sim) == []
    assert cluster.accounting.cache_reads('get', 'virtualmachines') == 1


@backend.simulator_only('faults')
def test_unsynced_reads_respect_the_label_selector(sim, cluster_factory,
                                                   custom_api):
    custom_api.create_namespaced_custom_object(
        GROUP, VERSION, 'default', 'virtualmachines',
        objects.make_vm('plain', labels={}))
    sim.faults.status(500, method='GET', path='/virtualmachines$',
                      query={'limit': '500'}, times=None)
    cluster = cluster_factory(sim, label_selector='redfish-enabled=true')
    assert cluster.get_vm('default', 'plain') is None
    assert cluster.get_vm('default', 'vm-00000') is not None
    assert len(cluster.list_vms()) == 4


def test_add_update_delete_propagate(sim, cluster, custom_api):
    # Synced first: before that get_vm reads live, a copy of the cached VM.
    assert cluster.wait_for_sync(10)
    custom_api.create_namespaced_custom_object(
        GROUP, VERSION, 'default', 'virtualmachines',
        objects.make_vm('new-vm', cores=1))
    vm = wait_for(lambda: cluster.get_vm('default', 'new-vm'))
    uuid = lookup.INDEXERS['uuid'](vm)[0]
    # (Not ``is vm``: the VM controller's status write may replace the
    # cached object between the two reads.)
    assert uuid and [v['metadata']['name'] for v in cluster.find_vms(
        'uuid', uuid)] == ['new-vm']
    custom_api.patch_namespaced_custom_object(
        GROUP, VERSION, 'default', 'virtualmachines', 'new-vm',
        {'spec': {'template': {'spec': {'domain': {'cpu': {'cores': 2}}}}}})
    wait_for(lambda: cluster.get_vm('default', 'new-vm')['spec']
             ['template']['spec']['domain']['cpu']['cores'] == 2)
    custom_api.delete_namespaced_custom_object(
        GROUP, VERSION, 'default', 'virtualmachines', 'new-vm')
    wait_for(lambda: cluster.get_vm('default', 'new-vm') is None)
    assert cluster.find_vms('uuid', uuid) == []
    assert len(cluster.list_vms()) == 4


def test_cluster_wide(sim_factory, cluster_factory):
    sim = sim_factory(vms=6, namespaces=3)
    cluster = cluster_factory(sim, namespaces=None)
    cluster.validate()
    assert cluster.wait_for_sync(10)
    assert {v['metadata']['namespace'] for v in cluster.list_vms()} == {
        'ns-000', 'ns-001', 'ns-002'}
    assert cluster.get_vm('ns-001', 'vm-00001') is not None
    assert cluster.get_vm('ns-000', 'vm-00001') is None


@pytest.mark.skipif(backend.REAL, reason='counts every connection to the '
                    "API server's port: on a real control plane the "
                    'simulated controllers hold theirs')
def test_stop_leaves_no_thread_or_connection(sim, cluster_factory):
    before = set(threading.enumerate())
    cluster = cluster_factory(sim)
    assert cluster.wait_for_sync(10)
    assert our_threads()
    # A live call leaves an idle keep-alive connection in the pool; keep
    # the pool referenced, as a reference cycle or a logged traceback may:
    # stop() must still close that connection.
    assert cluster.get_vm_live('default', 'vm-00000')
    manager = cluster._run().api.api_client.rest_client.pool_manager
    pools = [manager.pools.get(key) for key in manager.pools.keys()]
    assert pools and _client_connections(sim.port) > 0
    cluster.stop()
    assert our_threads() == []
    leftover = [t for t in set(threading.enumerate()) - before
                if 'process_request' not in t.name]
    assert leftover == []
    wait_for(lambda: _client_connections(sim.port) == 0)
    cluster.stop()


def test_a_stopped_cluster_stays_stopped(sim, cluster_factory):
    """A late reader (a background thread) starts no watch again."""
    cluster = cluster_factory(sim)
    assert cluster.wait_for_sync(10)
    cluster.stop()
    for read in (lambda: cluster.get_vm('default', 'vm-00000'),
                 lambda: cluster.get_vm_live('default', 'vm-00000'),
                 lambda: cluster.wait_for_sync(1)):
        with pytest.raises(apierrors.Unavailable, match='stopped'):
            read()
    assert our_threads() == []


@backend.simulator_only('faults')
def test_stop_does_not_wait_for_each_held_list(sim, cluster_factory):
    # The simulator holds the first LIST of both informers (VMs and VMIs)
    # for 5 s: stop() waits for them once, not once per informer.
    rule = sim.faults.latency(5, method='GET', path='virtualmachine',
                              times=2)
    cluster = cluster_factory(sim)
    cluster.start()
    wait_for(lambda: rule.hits == 2)
    started = time.monotonic()
    cluster.stop(timeout=0.5)
    assert time.monotonic() - started < 3
    # The held lists end, and their threads with them.
    wait_for(lambda: our_threads() == [])


def _client_connections(port):
    """ESTABLISHED TCP connections to ``port`` (client side)."""
    count = 0
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == '01' and \
                    int(fields[2].rsplit(':', 1)[1], 16) == port:
                count += 1
    return count


def test_validate(sim, cluster_factory, tmp_path):
    cluster_factory(sim).validate()
    with pytest.raises(config.ConfigError,
                       match='SUSHY_EMULATOR_KUBEVIRT_NAMESPACES.*nope'):
        cluster_factory(sim, namespaces=('default', 'nope')).validate()
    sim.authz.deny(namespace='default', resource='virtualmachines')
    with pytest.raises(config.ConfigError,
                       match='SUSHY_EMULATOR_KUBEVIRT_NAMESPACES.*default'):
        cluster_factory(sim).validate()
    bad = Cluster(config.Settings(
        kubeconfig=str(tmp_path / 'missing')))
    with pytest.raises(config.ConfigError,
                       match='SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG'):
        bad.validate()
    with pytest.raises(config.ConfigError,
                       match='SUSHY_EMULATOR_KUBEVIRT_CONTEXT'):
        cluster_factory(sim, context='elsewhere').validate()


def test_validate_names_an_unreachable_api_server(tmp_path):
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        url = 'http://127.0.0.1:%d' % sock.getsockname()[1]
    path = kubeconfig.write(tmp_path / 'kc', url, 'token', 'default')
    down = Cluster(config.Settings(kubeconfig=str(path),
                                   namespaces=('default',)))
    with pytest.raises(config.ConfigError) as exc:
        down.validate()
    text = str(exc.value)
    assert text.startswith('Cannot reach the Kubernetes API server at %s '
                           '(from SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG %s)'
                           % (url, path)), text
    assert 'Connection refused' in text
    assert 'NAMESPACES' not in text
