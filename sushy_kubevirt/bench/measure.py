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

"""Measure one emulator: start-up, sync, API calls per request, load, RSS."""

import collections
import dataclasses
import json
import os
import time
import typing

from sushy_kubevirt.bench import emulators
from sushy_kubevirt.bench import lag
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import profile
from sushy_kubevirt.bench import stats

MODES = ('warm', 'live', 'fake')
#: The live-read path serves about 2 req/s: it runs these workloads only.
LIVE_WORKLOADS = ('pr32', 'ironic')


@dataclasses.dataclass
class Plan:
    workdir: str
    vms: int = 50
    namespaces: int = 2
    rounds: int = 4
    seconds: float = 15.0
    parallel: int = 8
    keepalive: bool = False
    calls_requests: int = 10
    lag_samples: int = 4
    warm_deadline_s: float = 60.0
    workloads: typing.Tuple[str, ...] = load.WORKLOADS
    image_url: typing.Optional[str] = None
    profile: typing.Optional[str] = None
    #: When set, API calls are counted from a still cluster: before each
    #: request that follows a write, wait until no object has changed for
    #: this long (see :meth:`Cluster.settle`), so that a controller's late
    #: status update or a cache a watch event behind cannot add a retry or
    #: a confirming read: the counts are then exact.
    settle_s: typing.Optional[float] = None
    #: Serve every namespace (one cluster-wide informer per resource)
    #: instead of listing the cluster's namespaces in the emulator config.
    all_namespaces: bool = False
    #: gunicorn's worker processes.
    workers: int = emulators.WORKERS
    #: CPUs the emulator (all its processes) is pinned to; None: any.
    cpus: typing.Optional[typing.FrozenSet[int]] = None
    #: More settings of this driver's emulator config (not the fake's).
    settings: typing.Optional[typing.Mapping[str, object]] = None


def split(counts):
    """(per-request calls, background watches) from ``{verb res: n}``."""
    calls = {k: n for k, n in counts.items() if not k.startswith('watch ')}
    watches = {k: n for k, n in counts.items() if k.startswith('watch ')}
    return calls, watches


def system_ids(port, timeout=60.0):
    status, body = procs.http_get(port, '/redfish/v1/Systems', timeout)
    if status != 200:
        raise RuntimeError('GET /Systems: %s %s' % (status, body[:300]))
    return [m['@odata.id'].rstrip('/').rsplit('/', 1)[1]
            for m in json.loads(body)['Members']]


def _wait_listing(port, count, deadline_s):
    """Seconds until GET /Systems lists ``count`` systems (or None)."""
    started = time.monotonic()
    while time.monotonic() - started < deadline_s:
        try:
            if len(system_ids(port)) >= count:
                return time.monotonic() - started
        except (OSError, RuntimeError, ValueError):
            pass
        time.sleep(0.05)
    return None


def _burst(port, ids, requests=16, parallel=8):
    spec = {'port': port, 'systems': ids, 'workload': 'get_system',
            'requests': requests, 'parallel': parallel, 'seconds': 30}
    return load.run(spec)


def _wait_warm(port, ids, cluster, since, deadline_s):
    """Wait until the caches of every worker have synced.

    Synced: the informers' first lists (seen in the simulator's log) have
    stopped, and then two parallel bursts of GETs make no API call.
    Returns (seconds from epoch ``since`` to the end of the last informer
    list page, seconds waited), or (None, None) at the deadline.
    """
    started, quiet, pages = time.monotonic(), 0, None
    while time.monotonic() - started < deadline_s:
        state = cluster.informer_lists(since)
        if state['pages'] and state['pages'] == pages:
            cluster.counts()
            _burst(port, ids)
            calls, _ = split(cluster.counts())
            quiet = 0 if calls else quiet + 1
            if quiet == 2:
                return (round(state['last_end'] - since, 3),
                        round(time.monotonic() - started, 3))
        pages = state['pages']
        time.sleep(0.25)
    return None, None


def count_calls(plan, port, ids, cluster):
    """API calls per Redfish request, one request at a time, by kind.

    A ``poll`` (Ironic's 5 GETs) counts as one unit; every other kind
    counts per request. ``total`` is the mean per unit, ``max`` the most
    any single unit made.
    """
    kinds = ['list_systems', 'get_system', 'get_secureboot', 'poll',
             'reset', 'noop_reset', 'boot_patch']
    kinds += ['vmedia'] if plan.image_url else []
    client = load.Client(port, keepalive=False, timeout=60.0)
    result, wrote = {}, plan.settle_s is not None
    for kind in kinds:
        spec = {'systems': ids, 'workload': kind,
                'requests': plan.calls_requests, 'image_url': plan.image_url}
        per_unit, totals, failures = [], collections.Counter(), []
        cluster.counts()
        for task in load.tasks(spec):
            for unit in ([task] if kind == 'poll' else [[r] for r in task]):
                if wrote and plan.settle_s is not None:
                    cluster.settle(plan.settle_s)
                    cluster.counts()
                wrote = any(method != 'GET' for _, method, _, _ in unit)
                for _, method, path, body in unit:
                    status, content = client.send(method, path, body)
                    if status >= 400:
                        failures.append('%s %s %s: %s' % (
                            method, path, status, content[:300]))
                calls, _ = split(cluster.counts())
                per_unit.append(sum(calls.values()))
                totals.update(calls)
        result[kind] = {
            'requests': len(per_unit), 'errors': len(failures),
            'total': round(sum(per_unit) / len(per_unit), 3),
            'max': max(per_unit),
            'by_call': stats.per_request(totals, len(per_unit)),
            'failures': failures[:5]}
    return result


#: (requests, parallel) of the fixed-size workloads: kubevirt-redfish PR
#: #32's scenario, and one client's GETs one at a time (service latency
#: without queueing, for the scale mode).
_FIXED = {'pr32': (100, 20), 'serial': (200, 1)}
#: pr32 lasts well under a second when warm: the figures are those of the
#: median (by throughput) of this many runs.
PR32_RUNS = 5


def _median_run(runs):
    ranked = sorted(runs, key=lambda run: run['total']['rps'] or 0)
    result = ranked[len(ranked) // 2]
    result['runs_rps'] = [run['total']['rps'] for run in runs]
    return result


def _workload(plan, name, port, ids, cluster, mode):
    requests, parallel = _FIXED.get(
        name, (plan.rounds * 5 * len(ids), plan.parallel))
    spec = {'port': port, 'systems': ids, 'workload': name,
            'requests': requests, 'seconds': plan.seconds,
            'parallel': parallel,
            'keepalive': plan.keepalive, 'image_url': plan.image_url}
    runs = PR32_RUNS if name == 'pr32' and mode != 'live' else 1
    if cluster:
        cluster.counts()
    results = [load.spawn_run(spec) for _ in range(runs)]
    result = _median_run(results)
    if cluster:
        calls, watches = split(cluster.counts())
        done = sum(run['total']['requests'] for run in results)
        result['api_calls_per_request'] = (
            round(sum(calls.values()) / done, 3) if done else None)
        result['api_calls'] = calls
    return result


def loaded(emu, spec):
    """``load.spawn_run(spec)``, with the emulator's CPU ms per request.

    ``cpu_ms``: utime + stime of its processes over the run, per request
    answered (None when none was).
    """
    before = emu.cpu_s()
    result = load.spawn_run(spec)
    done = result['total']['requests']
    result['cpu_ms'] = (round(1000.0 * (emu.cpu_s() - before) / done, 3)
                        if done else None)
    return result


def vmedia_available(port, system_id):
    path = '/redfish/v1/Systems/%s/VirtualMedia/Cd' % system_id
    return procs.http_get(port, path)[0] == 200


def _extra(plan, mode):
    if mode == 'fake':
        return None
    extra = dict(plan.settings or {})
    if mode == 'live':
        # The lists are held: a worker would wait for them at boot.
        extra['SUSHY_EMULATOR_KUBEVIRT_BOOT_SYNC_WAIT'] = 0
    return extra


def start(plan, server, mode, cluster=None):
    """Start one emulator and wait until it serves (and, warm, has synced).

    Returns ``(emulator, result, system ids)``; the caller stops it. On the
    live path the caller holds the cluster's sync (:meth:`hold_sync`).
    """
    driver = 'fake' if mode == 'fake' else 'kubevirt'
    port = procs.free_port()
    name = '%s-%s-%s' % (server, mode, port)
    config = emulators.write_config(
        os.path.join(plan.workdir, name + '.conf'), port, driver,
        systems=plan.vms,
        kubeconfig=cluster and cluster.kubeconfig,
        namespaces=(cluster and not plan.all_namespaces
                    and cluster.namespace_names),
        vmedia=bool(plan.image_url),
        extra=_extra(plan, mode))
    wrapper = profile.wrapper(plan.profile) if plan.profile else ()
    started, boot = time.monotonic(), time.time()
    emu = emulators.Emulator(server, driver, config, port,
                             os.path.join(plan.workdir, name + '.log'),
                             wrapper, plan.workers, plan.cpus)
    result = {'server': server, 'mode': mode, 'vms': plan.vms,
              'latency_ms': cluster.latency_ms if cluster else 0,
              'max_qps': cluster.max_qps if cluster else None}
    try:
        # As long as a sync may take: workers list the cluster at boot.
        emu.wait_ready(max(60.0, plan.warm_deadline_s))
        result['start_s'] = round(time.monotonic() - started, 3)
        result['rss_idle_kb'] = emu.rss_kb()
        listed = _wait_listing(port, plan.vms, plan.warm_deadline_s)
        result['ready_s'] = listed and round(listed + result['start_s'], 3)
        ids = system_ids(port)
        if not ids:
            raise RuntimeError('%s lists no system:\n%s' % (
                name, procs.log_tail(emu.log_path)))
        if mode == 'warm':
            result['sync_s'], result['warm_s'] = _wait_warm(
                port, ids, cluster, boot, plan.warm_deadline_s)
        result['rss_kb'] = emu.rss_kb()
        result['rss_peak_kb'] = emu.peak_rss_kb()
    except BaseException:
        emu.stop()
        raise
    return emu, result, ids


def measure(plan, server, mode, cluster=None):
    """Start one emulator, measure it, stop it; return the figures."""
    if mode == 'live':
        # No setting forces live reads: keep the caches from syncing.
        cluster.hold_sync()
    try:
        emu, result, ids = start(plan, server, mode, cluster)
        try:
            port = emu.port
            media = plan.image_url and vmedia_available(port, ids[0])
            plan = dataclasses.replace(
                plan, image_url=plan.image_url if media else None)
            result['vmedia'] = bool(media)
            if cluster and plan.calls_requests:
                result['calls'] = count_calls(plan, port, ids, cluster)
            result['workloads'] = {
                name: _workload(plan, name, port, ids, cluster, mode)
                for name in plan.workloads
                if mode != 'live' or name in LIVE_WORKLOADS}
            if cluster and plan.lag_samples:
                result['lag_s'] = lag.measure(port, cluster.kubeconfig,
                                              cluster.namespace_names,
                                              ids[0], plan.lag_samples)
            result['rss_end_kb'] = emu.rss_kb()
        finally:
            emu.stop()
    finally:
        if mode == 'live':
            cluster.release_sync()
    return result
