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

"""``--quick``: the figures the history keeps, in about a minute.

On one cluster (``--vms``, default 50) and one server:

1. this driver warm: API calls per request kind, from a still cluster
   (lifecycle 10x faster, :meth:`Cluster.settle` before every request that
   follows a write), so the counts are exact;
2. sushy-tools' fake driver runs next to it, and both are loaded in turns
   (warm, fake; fake, warm; ...) with System GETs and Ironic's poll. The
   gated ratio is of CPU seconds per request, each side's least of its
   runs: the other tenants of a shared machine only ever add to it (a
   starved or shared core, a cold cache), and taking turns exposes both
   sides to the same spells of load;
   Then, the same way, Ironic's capacity mix (:func:`load.tasks`
   ``capacity``: System and SecureBoot GETs, a boot PATCH pair, a vmedia
   insert and eject; the vmedia pair only if both sides have virtual
   media). Its ratio has an absolute floor (:data:`history.FLOORS`). The
   mix writes: every VM, DataVolume and Secret of the cluster must be as
   found once the turns are over and the cluster is still (:func:`objects`;
   a tray's generation counter only grows), or the run fails;
3. the same warm emulator and its ceiling (:mod:`.ceiling`: a bare Flask
   app on the same server answering the same bytes from a dict), loaded
   in turns with System GETs;
4. the live-read path: its API calls per request kind and its throughput
   (bounded by ``--live-seconds``).

Then a cluster of :data:`.expandcost.VMS` VMs for the CPU of a refused
``$expand`` beside a warm System GET (:mod:`.expandcost`), and a fresh
cluster of ``--scale`` VMs (default 1,000) for sync time and RSS per VM.
"""

import dataclasses
import json
import statistics

from sushy_kubevirt.bench import ceiling
from sushy_kubevirt.bench import cluster as cluster_mod
from sushy_kubevirt.bench import expandcost
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import measure
from sushy_kubevirt.bench import runner
from sushy_kubevirt.bench import stats
from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import tray

#: Simulated lifecycle speed-up: every stage transition of a VM or a
#: DataVolume is over within 50 ms, so a 0.4 s still period is a settled
#: cluster.
TIME_SCALE = 10.0
SETTLE_S = 0.4
#: Request kinds of the load: name -> load workload.
LOADS = {'get': 'pr32', 'poll': 'ironic'}
#: Those the ceiling (:mod:`.ceiling`) answers.
CEILING_LOADS = {'get': 'pr32'}
#: Ironic's capacity mix, with writes (see :mod:`.capacity`).
MIX_LOADS = {'capacity': 'capacity'}
#: What a capacity turn must leave as it found it.
_KINDS = (('kubevirt.io', 'v1', 'virtualmachines'),
          ('cdi.kubevirt.io', 'v1beta1', 'datavolumes'),
          ('', 'v1', 'secrets'))
#: VM annotations that only grow: each insert's DataVolume generation.
_COUNTERS = frozenset(generations.vm_annotation(d) for d in tray.DEVICES)


def _spec(plan, port, ids, workload, seconds):
    """A load of ``rounds`` x 5 requests per node.

    GETs of a System 20 in parallel (as ``pr32``), or Ironic's polls
    ``parallel`` at once.
    """
    parallel = 20 if workload == 'pr32' else plan.parallel
    return {'port': port, 'systems': ids, 'workload': workload,
            'requests': plan.rounds * 5 * len(ids), 'parallel': parallel,
            'seconds': seconds, 'keepalive': plan.keepalive,
            'image_url': plan.image_url}


def _median_run(results):
    ranked = sorted(results, key=lambda r: r['total']['rps'] or 0)
    return ranked[len(ranked) // 2]


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _least(runs):
    values = [r['cpu_ms'] for r in runs if r['cpu_ms']]
    return min(values) if values else None


def interleave(plan, targets, pairs, cluster=None, loads=LOADS):
    """Load the warm and fake emulators in turns; return both and ratios.

    ``targets`` maps 'warm' and 'fake' (or the ceiling,
    :mod:`.ceiling`) to ``(emulator, system ids)``; ``loads`` maps request
    kinds to load workloads.
    Returns ``{kind: {'warm': run, 'fake': run, 'cpu': fake/warm ratio
    of each side's least CPU seconds per request, 'best': warm/fake ratio
    of each side's best throughput, 'rps': median of the pairs' warm/fake
    throughput ratios, 'api_calls': warm API calls per request, ...}}``,
    where a run is the median run (by throughput) of a side.
    """
    found = {}
    for kind, workload in loads.items():
        runs, pair_rps, pair_cpu = {'warm': [], 'fake': []}, [], []
        warm_calls = warm_requests = 0
        for index in range(pairs):
            order = ('warm', 'fake') if index % 2 == 0 else ('fake', 'warm')
            pair = {}
            for mode in order:
                emu, ids = targets[mode]
                spec = _spec(plan, emu.port, ids, workload, plan.seconds)
                if cluster and mode == 'warm':
                    cluster.counts()
                pair[mode] = measure.loaded(emu, spec)
                if cluster and mode == 'warm':
                    warm_calls += sum(measure.split(cluster.counts())[0]
                                      .values())
                    warm_requests += pair[mode]['total']['requests']
                runs[mode].append(pair[mode])
            pair_rps.append(stats.ratio(pair['warm']['total']['rps'],
                                        pair['fake']['total']['rps']))
            pair_cpu.append(stats.ratio(pair['fake']['cpu_ms'],
                                        pair['warm']['cpu_ms']))
        found[kind] = {
            'warm': _median_run(runs['warm']),
            'fake': _median_run(runs['fake']),
            'pairs_rps': pair_rps, 'pairs_cpu': pair_cpu,
            'rps': _median(pair_rps),
            'cpu': stats.ratio(_least(runs['fake']), _least(runs['warm'])),
            'runs_rps': {mode: [r['total']['rps'] for r in runs[mode]]
                         for mode in runs},
            'runs_cpu_ms': {mode: [r['cpu_ms'] for r in runs[mode]]
                            for mode in runs},
            'best': stats.ratio(
                max(r['total']['rps'] or 0 for r in runs['warm']),
                max(r['total']['rps'] or 0 for r in runs['fake'])),
            'cpu_ms': {mode: _median(r['cpu_ms'] for r in runs[mode])
                       for mode in runs},
            'api_calls': (round(warm_calls / warm_requests, 3)
                          if warm_requests else None),
            # This driver's failures are gated; the other side's (the
            # fake driver's SQLite store can answer 500 under load) are
            # only recorded.
            'errors': sum(r['total']['errors'] for r in runs['warm']),
            'failures': [f for r in runs['warm'] for f in r['failures']][:5],
            'other_errors': sum(r['total']['errors'] for r in runs['fake'])}
    return found


def objects(cluster):
    """``{kind/namespace/name: (labels, annotations, spec, data)}``.

    The VMs (run strategy, boot order, disks, the tray annotations), the
    DataVolumes and the Secrets of the cluster: all the state a write of
    the capacity mix touches.
    """
    from kubernetes import client as kube_client
    from kubernetes import config as kube_config

    api = kube_client.CustomObjectsApi(
        kube_config.new_client_from_config(cluster.kubeconfig))
    core = kube_client.CoreV1Api(api.api_client)
    found = {}
    for group, version, plural in _KINDS:
        for namespace in cluster.namespace_names:
            if group:
                items = api.list_namespaced_custom_object(
                    group, version, namespace, plural)['items']
            else:
                items = json.loads(core.list_namespaced_secret(
                    namespace, _preload_content=False).data)['items']
            for item in items:
                meta = item['metadata']
                notes = {k: v for k, v in (meta.get('annotations') or
                                           {}).items() if k not in _COUNTERS}
                found['%s/%s/%s' % (plural, namespace, meta['name'])] = (
                    meta.get('labels'), notes, item.get('spec'),
                    item.get('data'))
    return found


def _changed(before, after):
    """Names of the objects added, removed or changed, sorted."""
    return sorted(name for name in set(before) | set(after)
                  if before.get(name) != after.get(name))


def mix(plan, targets, pairs, cluster):
    """Ironic's capacity mix in turns; the nodes must be left as found.

    Returns :func:`interleave`'s ``capacity`` entry, with ``vmedia``
    (whether the mix had its vmedia pair) and ``changed`` (the objects not
    as found).
    """
    media = all(measure.vmedia_available(emu.port, ids[0])
                for emu, ids in targets.values())
    plan = dataclasses.replace(plan, image_url=plan.image_url if media
                               else None)
    cluster.settle(SETTLE_S)
    before = objects(cluster)
    found = interleave(plan, targets, pairs, cluster,
                       loads=MIX_LOADS)['capacity']
    cluster.settle(SETTLE_S)
    found.update(vmedia=bool(plan.image_url),
                 changed=_changed(before, objects(cluster)))
    return found


def _live(plan, server, cluster, seconds):
    cluster.hold_sync()
    try:
        emu, result, ids = measure.start(plan, server, 'live', cluster)
        try:
            result['calls'] = measure.count_calls(
                _media(plan, emu.port, ids), emu.port, ids, cluster)
            result['load'] = {
                kind: load.spawn_run(_spec(plan, emu.port, ids, workload,
                                           seconds))
                for kind, workload in LOADS.items()}
        finally:
            emu.stop()
    finally:
        cluster.release_sync()
    return result


def _media(plan, port, ids):
    media = plan.image_url and measure.vmedia_available(port, ids[0])
    return dataclasses.replace(plan,
                               image_url=plan.image_url if media else None)


def run(plan, server, pairs, live_seconds, scale_vms, log=print):
    """The quick measurements; a document :func:`history.record` reads."""
    plan = dataclasses.replace(plan, settle_s=SETTLE_S)
    document = {'quick': {'server': server, 'vms': plan.vms,
                          'namespaces': plan.namespaces, 'pairs': pairs,
                          'time_scale': TIME_SCALE}}
    cluster = cluster_mod.Cluster(plan.workdir, plan.vms, plan.namespaces,
                                  time_scale=TIME_SCALE)
    try:
        log('  %s warm: API calls per request kind' % server)
        warm, document['warm'], ids = measure.start(plan, server, 'warm',
                                                    cluster)
        try:
            document['warm']['calls'] = measure.count_calls(
                _media(plan, warm.port, ids), warm.port, ids, cluster)
            log('  %s warm and fake in turns, %d pairs' % (server, pairs))
            fake, document['fake'], fake_ids = measure.start(plan, server,
                                                             'fake')
            try:
                document['load'] = interleave(
                    plan, {'warm': (warm, ids), 'fake': (fake, fake_ids)},
                    pairs, cluster)
                log('  %s warm and fake in turns, Ironic\'s capacity mix'
                    % server)
                document['mix'] = mix(
                    plan, {'warm': (warm, ids), 'fake': (fake, fake_ids)},
                    pairs, cluster)
            finally:
                fake.stop()
            log('  %s warm and its ceiling in turns' % server)
            limit = ceiling.start(warm, ids, plan.workdir)
            try:
                document['ceiling'] = interleave(
                    plan, {'warm': (warm, ids), 'fake': (limit, ids)},
                    pairs, loads=CEILING_LOADS)
            finally:
                limit.stop()
        finally:
            warm.stop()
        log('  %s live' % server)
        document['live'] = _live(plan, server, cluster, live_seconds)
    finally:
        cluster.stop()
    log('  %s refused $expand and warm GETs in turns at %d VMs'
        % (server, expandcost.VMS))
    document['expand'] = expandcost.run(plan, server, pairs, TIME_SCALE)
    if scale_vms:
        log('  %s warm at %d VMs' % ('devserver', scale_vms))
        document['scale'] = runner.scale(plan, (scale_vms,),
                                         'devserver', log=lambda m: None)[0]
    return document


def ceilings(plan, sizes, servers, pairs, log=print):
    """The warm emulator and its ceiling in turns, per size and server.

    Each size seeds a cluster (1,000 VMs a namespace); returns one entry
    per size and server with :func:`interleave`'s ``get`` figures.
    """
    found = []
    for vms in sizes:
        sized = dataclasses.replace(
            plan, vms=vms, namespaces=max(1, vms // 1000), calls_requests=0,
            lag_samples=0, warm_deadline_s=max(plan.warm_deadline_s,
                                               60.0 + vms / 20.0))
        cluster = cluster_mod.Cluster(sized.workdir, vms, sized.namespaces)
        try:
            for server in servers:
                log('  ceiling %s at %d VMs' % (server, vms))
                warm, _, ids = measure.start(sized, server, 'warm', cluster)
                try:
                    limit = ceiling.start(warm, ids, sized.workdir)
                    try:
                        get = interleave(
                            sized, {'warm': (warm, ids),
                                    'fake': (limit, ids)},
                            pairs, loads=CEILING_LOADS)['get']
                    finally:
                        limit.stop()
                finally:
                    warm.stop()
                found.append({'vms': vms, 'server': server, 'get': get})
        finally:
            cluster.stop()
    return found
