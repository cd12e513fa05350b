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

"""Namespaces the cache cannot read: revoked at runtime, or missing.

Their reads raise ``Unreadable`` (the drivers answer Redfish 503) instead
of serving a frozen or empty cache; /metrics and the log say so, and the
cache serves again by itself once the cause is fixed.
"""

import logging

import pytest
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import cluster as kube_cluster

SYNCED = 'sushy_kubevirt_informer_synced{resource="virtualmachines",' \
    'namespace="ns-001"}'
FORBIDDEN = 'sushy_kubevirt_informer_forbidden{resource="virtualmachines",' \
    'namespace="ns-001"}'


def metric(cluster, name):
    for line in cluster.accounting.render().splitlines():
        if line.startswith(name + ' '):
            return line.split()[-1]
    return None


def unreadable(read):
    try:
        read()
    except apierrors.Unreadable as exc:
        return exc
    return None


def test_access_revoked_after_sync_is_reported_and_not_served(
        sim_factory, cluster_factory, caplog):
    sim = sim_factory(vms=4, namespaces=2)
    cluster = cluster_factory(sim, namespaces=('ns-000', 'ns-001'))
    assert cluster.wait_for_sync(10)
    assert cluster.get_vm('ns-001', 'vm-00001') is not None
    assert (metric(cluster, SYNCED), metric(cluster, FORBIDDEN)) == \
        ('1', '0')
    with caplog.at_level(logging.WARNING, logger='sushy_kubevirt'):
        sim.authz.deny(namespace='ns-001', resource='virtualmachines')
        # RBAC is checked when a watch starts: end the open ones.
        assert sim.restart_api().wait(5)
        exc = wait_for(lambda: unreadable(
            lambda: cluster.get_vm('ns-001', 'vm-00001')))
    assert str(exc) == ('the API server refuses to list '
                        'virtualmachines.kubevirt.io in namespace ns-001') \
        or str(exc) == ('the API server refuses to watch '
                        'virtualmachines.kubevirt.io in namespace ns-001')
    assert exc.namespace == 'ns-001' and exc.cause.status == 403
    assert (metric(cluster, SYNCED), metric(cluster, FORBIDDEN)) == \
        ('0', '1')
    errors = [r.getMessage() for r in caplog.records
              if r.levelno == logging.ERROR]
    assert any('ns-001/virtualmachines: Forbidden' in m for m in errors)
    # The other namespace is served; the collection is not half-told.
    assert cluster.get_vm('ns-000', 'vm-00000') is not None
    with pytest.raises(apierrors.Unreadable):
        cluster.list_vms()
    sim.authz.clear()
    wait_for(lambda: not unreadable(cluster.list_vms), timeout=10)
    assert len(cluster.list_vms()) == 4
    assert (metric(cluster, SYNCED), metric(cluster, FORBIDDEN)) == \
        ('1', '0')


def test_a_missing_namespace_is_reported_until_created(
        sim, cluster_factory, caplog, monkeypatch):
    monkeypatch.setattr(kube_cluster, 'NAMESPACE_RECHECK', 0.2)
    cluster = cluster_factory(sim, namespaces=('default', 'later'))
    with caplog.at_level(logging.ERROR, logger='sushy_kubevirt'):
        # Before the cache syncs (live reads) and after it.
        for _ in range(2):
            exc = unreadable(cluster.list_vms)
            assert str(exc) == 'namespace later does not exist'
            assert exc.cause.status == 404
            assert cluster.wait_for_sync(10)
        assert unreadable(lambda: cluster.get_vm('later', 'x'))
        assert cluster.get_vm('default', 'vm-00000') is not None
    errors = [r.getMessage() for r in caplog.records
              if 'later' in r.getMessage()]
    assert len(errors) == 1, errors
    assert 'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES' in errors[0]
    namespaces = sim.store.resource('', 'namespaces')
    sim.store.create(namespaces, {'metadata': {'name': 'later'}})
    wait_for(lambda: not unreadable(cluster.list_vms), timeout=10)
    assert len(cluster.list_vms()) == 4
    assert cluster.get_vm('later', 'x') is None
