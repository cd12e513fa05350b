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

"""What one ``python -m sushy_kubevirt.bench`` run measures, in order."""

import dataclasses

from sushy_kubevirt.bench import cluster as cluster_mod
from sushy_kubevirt.bench import measure

#: (simulated API latency in ms, API server max QPS): unthrottled, then
#: 20 ms with APF-style throttling.
PROFILES = ((0, None), (20, 50))


def _with_cluster(plan, latency_ms, max_qps, body):
    cluster = cluster_mod.Cluster(plan.workdir, plan.vms, plan.namespaces,
                                  latency_ms, max_qps)
    try:
        return body(cluster)
    finally:
        cluster.stop()


def side_by_side(plan, servers, modes, profiles=PROFILES, log=print):
    """Each mode on each server, then the slower API profiles.

    The live-read path and the later profiles (simulated latency,
    throttling) run on the first server only; API calls per request kind
    are counted in the first profile only (latency does not change them).
    The fake driver makes no API call, so it runs once per server; its
    figures stand for every profile.
    """
    clusters, runs = [], []

    def run(server, mode, cluster=None, first=True):
        log('  %s %s (%s ms)' % (server, mode,
                                 cluster.latency_ms if cluster else '-'))
        sub = plan if first else dataclasses.replace(plan, calls_requests=0)
        runs.append(measure.measure(sub, server, mode, cluster))

    kube_modes = [m for m in modes if m != 'fake']
    for index, (latency_ms, max_qps) in enumerate(profiles):
        if not kube_modes:
            break
        on = servers if index == 0 else servers[:1]

        def body(cluster):
            clusters.append({
                'vms': cluster.vms, 'namespaces': cluster.namespaces,
                'latency_ms': latency_ms, 'max_qps': max_qps,
                'seed_s': round(cluster.seed_s, 3)})
            for server in on:
                for mode in kube_modes:
                    if mode != 'live' or server == servers[0]:
                        run(server, mode, cluster, index == 0)
        _with_cluster(plan, latency_ms, max_qps, body)
    if 'fake' in modes:
        for server in servers:
            run(server, 'fake')
    return {'clusters': clusters, 'runs': runs}


def scale(plan, sizes, server='devserver', modes=('namespaces',),
          log=print):
    """Sync time, RSS per VM and GET latency of the warm driver at sizes.

    Each size seeds one cluster; each of ``modes`` (``namespaces``: the
    emulator lists the cluster's namespaces, one cache per namespace;
    ``cluster``: one cluster-wide cache per resource) then runs on it in
    an emulator of its own.
    """
    results = []
    for vms in sizes:
        namespaces = max(1, vms // 1000)
        sized = dataclasses.replace(plan, vms=vms, namespaces=namespaces,
                                    workloads=('pr32', 'serial'),
                                    lag_samples=0,
                                    calls_requests=0)
        log('  scale %d VMs in %d namespaces' % (vms, namespaces))

        def body(cluster):
            each = []
            for mode in modes:
                log('    %s' % mode)
                moded = dataclasses.replace(
                    sized, all_namespaces=mode == 'cluster')
                result = measure.measure(moded, server, 'warm', cluster)
                result.update(seed_s=round(cluster.seed_s, 3),
                              namespaces=namespaces, scope=mode)
                each.append(result)
            return each
        results += _with_cluster(sized, 0, None, body)
    return results


def hot_path(plan, output, server='devserver', log=print):
    """Profile the warm driver under Ironic's poll; return the raw path."""
    log('  profile %s warm under the ironic poll' % server)
    profiled = dataclasses.replace(plan, workloads=('ironic',), rounds=8,
                                   lag_samples=0, calls_requests=0,
                                   profile=output)
    return _with_cluster(
        profiled, 0, None,
        lambda cluster: measure.measure(profiled, server, 'warm', cluster))
