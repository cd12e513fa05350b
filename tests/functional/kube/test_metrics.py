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

"""Informer health in the Prometheus text of ``accounting.render()``."""

import re

from tests import backend
from tests.functional.kube.conftest import wait_for

VM_WATCH = dict(path='/virtualmachines$', query={'watch': 'true'})


def sample(text, metric, resource, namespace):
    match = re.search(r'^%s\{resource="%s",namespace="%s"\} (\S+)$'
                      % (metric, resource, namespace), text, re.M)
    return float(match.group(1)) if match else None


def test_informer_health_gauges(sim, cluster):
    text = cluster.accounting.render()
    for resource in ('virtualmachines', 'virtualmachineinstances'):
        assert sample(text, 'sushy_kubevirt_informer_synced', resource,
                      'default') == 1
        assert sample(text, 'sushy_kubevirt_informer_relists_total',
                      resource, 'default') == 0
        assert 0 <= sample(
            text, 'sushy_kubevirt_informer_resource_version_age_seconds',
            resource, 'default') < 10
    assert '# TYPE sushy_kubevirt_informer_synced gauge' in text
    assert '# TYPE sushy_kubevirt_informer_relists_total counter' in text
    # Watches end after 1 s (the test timings): each restart is counted.
    wait_for(lambda: sample(
        cluster.accounting.render(),
        'sushy_kubevirt_informer_watch_restarts_total', 'virtualmachines',
        'default') >= 1)
    sim.faults.watch_error(410, after=0, **VM_WATCH)
    wait_for(lambda: sample(
        cluster.accounting.render(), 'sushy_kubevirt_informer_relists_total',
        'virtualmachines', 'default') == 1)
    cluster.stop()
    assert 'informer' not in cluster.accounting.render()


@backend.simulator_only('authz')
def test_forbidden_namespace_reads_unsynced(sim_factory, cluster_factory):
    sim = sim_factory(vms=2, namespaces=2)
    sim.authz.deny(namespace='ns-001', resource='virtualmachines')
    cluster = cluster_factory(sim, namespaces=('ns-000', 'ns-001'))
    cluster.start()
    wait_for(lambda: sample(cluster.accounting.render(),
                            'sushy_kubevirt_informer_synced',
                            'virtualmachines', 'ns-000') == 1)
    text = cluster.accounting.render()
    assert sample(text, 'sushy_kubevirt_informer_synced', 'virtualmachines',
                  'ns-001') == 0
    assert sample(text, 'sushy_kubevirt_informer_resource_version_age_'
                  'seconds', 'virtualmachines', 'ns-001') is None
