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

"""Leader election on a ``coordination.k8s.io/v1`` Lease.

The semantics of client-go's ``leaderelection`` with a ``LeaseLock``:
``spec.holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``,
``renewTime`` and ``leaseTransitions``; every write is a PUT guarded by the
Lease's ``resourceVersion``, so two candidates never both win. A candidate
takes a held Lease only once it has seen the same ``renewTime`` for a whole
``leaseDurationSeconds`` on its own clock (clocks are never compared). The
leader renews every ``renew_period``; it stops leading when no renewal
succeeded for ``duration - renew_period`` (client-go's renew deadline), so
it has stopped before anybody else may take over. Stopping releases the
Lease (empty holder), so a successor needs not wait.

Written here rather than with the official client's ``leaderelection``
module: that one only takes ConfigMap locks and cannot carry the
leader's checkpoint (:attr:`Elector.checkpoint`, one annotation written
with every renewal).
"""

import datetime
import json
import logging
import math
import os
import socket
import threading
import time
import uuid

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources

LOG = logging.getLogger(__name__)
#: Annotation of the Lease holding the leader's checkpoint (JSON).
CHECKPOINT = 'sushy-kubevirt.io/checkpoint'


def identity():
    """A candidate name unique to this process: host, pid, random."""
    return '%s_%d_%s' % (socket.gethostname(), os.getpid(),
                         uuid.uuid4().hex[:8])


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%S.%fZ')


class Elector:
    """Campaign for Lease ``namespace/name`` in a thread.

    :param cluster: a :class:`~sushy_kubevirt.kube.cluster.Cluster`.
    :param on_lead: ``fn(checkpoint)`` when this process becomes the
        leader, with the checkpoint the Lease holds (a dict).
    :param checkpoint: ``fn()`` giving the checkpoint to write with each
        renewal (a JSON-serialisable dict).
    :param on_tick: ``fn()`` after each successful renewal.
    """

    def __init__(self, cluster, namespace, name, duration, renew_period,
                 on_lead, checkpoint, on_tick=None):
        self.cluster = cluster
        self.namespace = namespace
        self.name = name
        self.duration = duration
        self.renew_period = renew_period
        self.identity = identity()
        self._on_lead = on_lead
        self._checkpoint = checkpoint
        self._on_tick = on_tick
        self._renewed = None  # monotonic time of our last renewal
        self._led = False  # whether this process ever led
        self._observed = (None, None)  # (holder, renewTime), seen at
        self._observed_at = 0.0
        self._stop = threading.Event()
        self._thread = None
        self.transitions = 0

    # state

    def leading(self):
        """Whether this process may act as the leader now."""
        renewed = self._renewed
        return renewed is not None and \
            time.monotonic() - renewed < self.duration - self.renew_period

    # lifecycle

    def start(self):
        self._thread = threading.Thread(
            target=self._run, daemon=True, name='lease %s' % self.name)
        self._thread.start()

    def stop(self, timeout=5.0):
        """Stop campaigning; release the Lease if it still names us.

        The server's holder decides, not :meth:`leading`: a renewal that
        came late (a loaded machine) still leaves the Lease ours, and the
        others would wait its whole duration. The write carries the
        resourceVersion read, so a Lease taken meanwhile is left alone.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        led, self._renewed = self._led, None
        if not led:
            return
        try:
            lease = self._get()
            if lease is not None and (lease.get('spec') or {}).get(
                    'holderIdentity') == self.identity:
                self._write(lease, release=True)
        except apierrors.ApiError as exc:
            LOG.info('Lease %s not released: %s', self.name, exc)

    def _run(self):
        denied = None
        while not self._stop.is_set():
            try:
                self._try()
                denied = None
            except apierrors.Forbidden as exc:
                # No candidate can ever lead: say so once, not per round.
                if str(exc) != denied:
                    LOG.error('Lease %s in namespace %s cannot be taken: '
                              'the RBAC permission to %s is missing: %s',
                              self.name, self.namespace,
                              exc.permission() or 'get, create and update '
                              'leases', exc)
                denied = str(exc)
            except apierrors.ApiError as exc:
                LOG.debug('Lease %s: %s', self.name, exc)
            except Exception:
                LOG.exception('Lease %s: round failed', self.name)
            if not self.leading():
                self._renewed = None
            self._stop.wait(self.renew_period)

    # one round

    def _get(self):
        try:
            return self.cluster.get_object(resources.LEASE, self.namespace,
                                           self.name)
        except apierrors.NotFound:
            return None

    def _try(self):
        lease = self._get()
        if lease is None:
            self._create()
            return
        spec = lease.get('spec') or {}
        holder = spec.get('holderIdentity') or ''
        seen = (holder, spec.get('renewTime'))
        now = time.monotonic()
        if seen != self._observed:
            self._observed, self._observed_at = seen, now
        if holder == self.identity and self._renewed is not None:
            self._write(lease)
            self._renewed = now
        elif holder in ('', self.identity) or \
                now - self._observed_at >= float(
                    spec.get('leaseDurationSeconds') or self.duration):
            self._write(lease, acquire=True)
            self._lead(lease, now)
        else:
            return
        if self._on_tick is not None:
            self._on_tick()

    def _lead(self, lease, now):
        # Leading starts once on_lead has taken the checkpoint: a caller
        # that sees leading() never acts on state not yet restored.
        self._led = True
        raw = (lease.get('metadata', {}).get('annotations') or {}).get(
            CHECKPOINT)
        try:
            checkpoint = json.loads(raw) if raw else {}
        except ValueError:
            checkpoint = {}
        LOG.info('Lease %s acquired by %s', self.name, self.identity)
        self._on_lead(checkpoint if isinstance(checkpoint, dict) else {})
        self._renewed = now

    def _spec(self, acquire, transitions):
        stamp = _now()
        spec = {'holderIdentity': self.identity,
                'leaseDurationSeconds': int(math.ceil(self.duration)),
                'renewTime': stamp, 'leaseTransitions': transitions}
        if acquire:
            spec['acquireTime'] = stamp
        return spec

    def _create(self):
        body = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                'metadata': {'name': self.name,
                             'annotations': {CHECKPOINT: '{}'}},
                'spec': self._spec(True, 0)}
        now = time.monotonic()
        try:
            self.cluster.create_object(resources.LEASE, self.namespace, body)
        except apierrors.Conflict:
            return  # another candidate created it first
        self._lead(body, now)
        if self._on_tick is not None:
            self._on_tick()

    def _write(self, lease, acquire=False, release=False):
        spec = dict(lease.get('spec') or {})
        transitions = int(spec.get('leaseTransitions') or 0)
        if acquire and spec.get('holderIdentity') not in (
                None, '', self.identity):
            transitions += 1
        new = self._spec(acquire, transitions)
        if not acquire:
            new['acquireTime'] = spec.get('acquireTime')
        if release:
            new.update(holderIdentity='', leaseDurationSeconds=1)
        meta = dict(lease['metadata'])
        annotations = dict(meta.get('annotations') or {})
        if not acquire:
            annotations[CHECKPOINT] = json.dumps(self._checkpoint(),
                                                 sort_keys=True)
        meta['annotations'] = annotations
        body = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                'metadata': meta, 'spec': new}
        self.cluster.replace_object(resources.LEASE, self.namespace,
                                    self.name, body)
        self.transitions = transitions
