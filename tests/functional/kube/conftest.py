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

"""A simulator, a kubeconfig for it and Clusters with tiny timings."""

import threading
import time

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
import pytest
from tests import backend

from sushy_kubevirt import config
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.kube.cluster import Cluster
from sushy_kubevirt.kube import reflector

TIMINGS = reflector.Timings(backoff_initial=0.05, backoff_cap=0.2,
                            backoff_reset=5.0, watch_timeout=(1, 1),
                            read_timeout=3.0, short_watch=0.2)


def wait_for(predicate, timeout=10.0, interval=0.02):
    """Poll ``predicate()`` until it is true; return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, 'condition not met in time'
        time.sleep(interval)


def our_threads():
    return [t for t in threading.enumerate()
            if t.name.startswith(('reflector ', 'dispatcher '))]


@pytest.fixture
def sim_factory():
    sims = []

    def make(**kwargs):
        kwargs.setdefault('bookmark_interval', 0.2)
        kwargs.setdefault('min_request_timeout', 2.0)
        sim = backend.start(**kwargs)
        sims.append(sim)
        return sim

    yield make
    for sim in sims:
        sim.stop()


@pytest.fixture
def sim(sim_factory):
    return sim_factory(vms=4)


@pytest.fixture
def cluster_factory(tmp_path):
    clusters = []

    def make(sim, datavolumes=False, timings=TIMINGS, **settings):
        path = sim.write_kubeconfig(tmp_path / ('kc-%d' % len(clusters)))
        settings.setdefault('namespaces', ('default',))
        cluster = Cluster(
            config.Settings(kubeconfig=str(path), **settings),
            datavolumes=datavolumes, indexers=lookup.INDEXERS,
            timings=timings)
        clusters.append(cluster)
        return cluster

    yield make
    for cluster in clusters:
        cluster.stop()
    assert our_threads() == []


@pytest.fixture
def cluster(sim, cluster_factory):
    cluster = cluster_factory(sim)
    assert cluster.wait_for_sync(10)
    return cluster


@pytest.fixture
def official_client(sim, tmp_path):
    """The official client's ApiClient, as another user of the cluster."""
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config(
        config_file=str(backend.write_admin_kubeconfig(
            sim, tmp_path / 'other')),
        client_configuration=cfg)
    api_client = k8s_client.ApiClient(cfg)
    yield api_client
    api_client.close()


@pytest.fixture
def custom_api(official_client):
    """The official client's CustomObjectsApi."""
    return k8s_client.CustomObjectsApi(official_client)


def kube_calls(sim, verb=None, resource='virtualmachines', **filters):
    """Request-log entries other than watches (or only ``verb``)."""
    return sim.request_log.entries(
        resource=resource,
        verb=verb if verb else (lambda v: v != 'watch'), **filters)
