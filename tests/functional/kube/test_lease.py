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

"""Leader election on a Lease, against the simulator."""

import json

from kubernetes import client as k8s_client
import pytest
from tests import backend
from tests.functional.kube.conftest import wait_for

from sushy_kubevirt.kube import lease

DURATION = 2.0
RENEW = 0.2


@pytest.fixture
def coordination(official_client):
    """The official client's CoordinationV1Api, as another user."""
    return k8s_client.CoordinationV1Api(official_client)


def _elector(cluster, led, state):
    return lease.Elector(cluster, 'default', 'test-lease', DURATION, RENEW,
                         led.append, lambda: state)


def test_the_simulator_guards_lease_writes(sim, coordination):
    body = k8s_client.V1Lease(
        metadata=k8s_client.V1ObjectMeta(name='guarded'),
        spec=k8s_client.V1LeaseSpec(holder_identity='a',
                                    lease_duration_seconds=5))
    made = coordination.create_namespaced_lease('default', body)
    made.spec.holder_identity = 'b'
    coordination.replace_namespaced_lease('guarded', 'default', made)
    made.spec.holder_identity = 'c'  # still the first resourceVersion
    with pytest.raises(k8s_client.ApiException) as exc:
        coordination.replace_namespaced_lease('guarded', 'default', made)
    assert exc.value.status == 409
    got = coordination.read_namespaced_lease('guarded', 'default')
    assert got.spec.holder_identity == 'b'


def test_one_leader_then_a_takeover_with_its_checkpoint(
        sim, cluster_factory, coordination):
    first, second = cluster_factory(sim), cluster_factory(sim)
    led_a, led_b = [], []
    a = _elector(first, led_a, {'sub': [5, 0]})
    b = _elector(second, led_b, {})
    a.start()
    try:
        wait_for(a.leading)
        b.start()
        got = wait_for(lambda: coordination.read_namespaced_lease(
            'test-lease', 'default').metadata.annotations.get(
                lease.CHECKPOINT) == '{"sub": [5, 0]}')
        assert got
        spec = coordination.read_namespaced_lease('test-lease',
                                                  'default').spec
        assert spec.holder_identity == a.identity
        assert spec.lease_duration_seconds == DURATION
        assert not b.leading() and led_b == []
        a.stop()  # releases: b need not wait for the duration
        wait_for(b.leading, timeout=DURATION)
        assert led_b == [{'sub': [5, 0]}]
        spec = coordination.read_namespaced_lease('test-lease',
                                                  'default').spec
        assert spec.holder_identity == b.identity
        assert spec.lease_transitions == 0  # a released it
    finally:
        a.stop()
        b.stop()


def test_a_silent_leader_is_replaced_after_the_duration(
        sim, cluster_factory, coordination):
    cluster = cluster_factory(sim)
    # Not through the official client: it turns the body into a V1Lease
    # and writes its renew_time as "...T00:00:00+00:00", which
    # kube-apiserver refuses (a MicroTime has six fractional digits).
    held = {
        'metadata': {'name': 'test-lease', 'annotations': {
            lease.CHECKPOINT: json.dumps({'s': [9, 1]})}},
        'spec': {'holderIdentity': 'dead', 'leaseDurationSeconds': 1,
                 'renewTime': '2026-01-01T00:00:00.000000Z',
                 'leaseTransitions': 3}}
    status, body = backend.admin_request(
        sim, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/'
        'leases', held)
    assert status == 201, body
    led = []
    elector = _elector(cluster, led, {})
    elector.start()
    try:
        wait_for(lambda: led, timeout=20)
        assert led == [{'s': [9, 1]}]
        spec = coordination.read_namespaced_lease('test-lease',
                                                  'default').spec
        assert spec.holder_identity == elector.identity
        assert spec.lease_transitions == 4
    finally:
        elector.stop()


@backend.simulator_only('authz')
def test_a_lease_the_rbac_forbids_is_an_error_once(sim, cluster_factory,
                                                   caplog):
    """A missing leases permission is logged as an error, once."""
    sim.authz.deny(resource='leases')
    elector = _elector(cluster_factory(sim), [], {})
    with caplog.at_level('DEBUG', logger=lease.__name__):
        elector.start()
        try:
            wait_for(lambda: len(sim.request_log.entries(
                resource='leases')) >= 3)
        finally:
            elector.stop()
    errors = [r for r in caplog.records if r.levelname == 'ERROR']
    assert len(errors) == 1
    assert 'the RBAC permission to get leases.coordination.k8s.io in ' \
        'namespace default is missing' in errors[0].getMessage()
    assert not elector.leading()
