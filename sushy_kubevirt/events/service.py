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

"""The EventService of one process: events from the watch cache, one sender.

Every process (gunicorn worker, replica) computes the events from its own
watch cache (:mod:`sushy_kubevirt.kubevirt.changes` between the facts of
a VM before and after each change) and keeps the last ``buffer_size`` of
them. Each event's key is ``(resourceVersion, n)``: the resourceVersion of
the object change that caused it and its rank among that change's events,
so every process gives the same event the same ``EventId``.

Only the holder of the Lease ``sushy-kubevirt-events`` sends. With every
renewal it writes, per subscription, the key of the last event delivered
(or given up); a new leader sends the buffered events after those keys,
and every later one. See ``doc/source/eventservice.rst`` for the exact
guarantee.

With accounts (a file, or the cluster's identities), a subscription gets
the events of the namespaces its owner's account reaches now: checked as
each event is queued, so an account's change applies to the events that
follow it (within the access cache's time for Kubernetes identities).
"""

import atexit
import collections
import datetime
import heapq
import itertools
import logging
import os
import sys
import threading
import time

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import sources
from sushy_kubevirt.events import delivery
from sushy_kubevirt.events import resourceevent
from sushy_kubevirt.events import subscriptions
from sushy_kubevirt import imagecheck
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import lease
from sushy_kubevirt.kubevirt import changes
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import tray

LOG = logging.getLogger(__name__)
LEASE_NAME = 'sushy-kubevirt-events'
#: Seconds a change waits for an older change from another watch.
ORDER_WINDOW = 0.1
_KINDS = {'virtualmachines': 'vm', 'virtualmachineinstances': 'vmi',
          'datavolumes': 'dv'}
_services = {}
_exit_hook = []
_services_lock = threading.Lock()


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='milliseconds').replace('+00:00', 'Z')


def _rv(obj):
    try:
        return int(fields.get(obj, 'metadata', 'resourceVersion') or 0)
    except ValueError:
        return 0


def _owner(dv):
    for ref in fields.get(dv, 'metadata', 'ownerReferences', default=[]):
        if ref.get('kind') == 'VirtualMachine':
            return ref.get('name')
    return None


def shared(cluster, settings):
    """The EventService of this process for ``cluster`` (started).

    One per process: a service made for another Cluster (the settings
    changed) is stopped, as :func:`~sushy_kubevirt.drivers.systems.
    shared_cluster` stops that Cluster.
    """
    key = id(cluster)
    with _services_lock:
        stale = [_services.pop(k) for k in list(_services) if k != key]
        service = _services.get(key)
        if service is None or service.pid != os.getpid():
            if not _exit_hook:
                # A clean exit (gunicorn's SIGTERM) releases the Lease.
                _exit_hook.append(atexit.register(stop_services))
            service = _services[key] = EventService(cluster, settings)
            service.start()
    for old in stale:
        if old.pid == os.getpid():
            old.stop()
    return service


def stop_services():
    with _services_lock:
        services = list(_services.values())
        _services.clear()
    for service in services:
        if service.pid == os.getpid():
            service.stop()


class EventService:
    """Events of one process's watch cache, sent while it holds the Lease.

    :param settings: :class:`sushy_kubevirt.config.Settings`.
    """

    def __init__(self, cluster, settings):
        self.cluster = cluster
        self.settings = settings.events
        self.pid = os.getpid()
        self.store = subscriptions.Store(cluster, self.settings.namespace,
                                         self.settings.max_subscriptions)
        #: The delivery threads of this process, for every subscription.
        self.pool = delivery.Pool(self.settings.workers)
        self._kube_settings = settings
        #: The accounts file, the cluster's identities, or None.
        self.accounts = sources.accounts(cluster, settings)
        self._policy = None
        self._facts = {}
        #: The latest VM, VMI and DataVolume of each name, from the events.
        self._seen = {'vm': {}, 'vmi': {}, 'dv': {}}
        self._buffer = collections.deque(maxlen=self.settings.buffer_size)
        #: ``fn(key, record, where)`` of every event, whoever leads (SSE).
        self._listeners = set()
        self._lock = threading.RLock()
        self._senders = {}
        #: Per subscription, the test events' own queue (whoever leads).
        self._testers = {}
        self._test_keys = itertools.count(1)
        self._floors = {}
        self._gone = collections.Counter()
        self._synced = False
        self._pending = []
        self._seq = itertools.count()
        self._ordered = threading.Condition()
        self._stopped = threading.Event()
        self.elector = lease.Elector(
            cluster, self.settings.namespace, LEASE_NAME,
            self.settings.lease_duration, self.settings.renew_period,
            self._lead, self._checkpoint, self._refresh)

    # lifecycle

    def start(self):
        threading.Thread(target=self._begin, daemon=True,
                         name='events start').start()

    def _begin(self):
        threading.Thread(target=self._order, daemon=True,
                         name='events order').start()
        while not self._stopped.is_set():
            if self.cluster.add_handler(self._on_change, timeout=5.0):
                break
        if not self._stopped.is_set():
            self.elector.start()

    def stop(self):
        self._stopped.set()
        self.elector.stop()
        with self._lock:
            self._stop_senders()
            for tester in self._testers.values():
                tester.stop()
            self._testers = {}
        self.pool.stop()

    def policy(self):
        if self._policy is None:
            s = self.settings
            self._policy = imageurl.Policy(
                allowed=s.allowed_hosts, denied=s.denied_hosts,
                endpoints=imagecheck.endpoints(
                    client.api_host(self._kube_settings), s.timeout))
        return self._policy

    # events from the watch cache (the dispatcher, then the order thread)

    def _trays(self, vm):
        if not self.cluster.datavolumes:
            return {}
        namespace = vm['metadata']['namespace']
        return {device: self._seen['dv'].get((
            namespace, media.tray_datavolume_name(vm, device)))
            for device in tray.DEVICES}

    def _on_change(self, event_type, plural, obj):
        """Queue a change for :meth:`_order` (on the dispatcher thread)."""
        if self._stopped.is_set():
            return
        with self._ordered:
            if event_type == 'SYNCED':
                self._synced = True
                return
            heapq.heappush(self._pending, (
                _rv(obj), next(self._seq), time.monotonic() + ORDER_WINDOW,
                not self._synced, event_type, plural, obj))
            self._ordered.notify()

    def _order(self):
        """Apply the queued changes in resourceVersion order.

        The VM, VMI and DataVolume watches are separate streams: a change
        waits ``ORDER_WINDOW`` seconds for an older one of another stream.
        """
        while not self._stopped.is_set():
            with self._ordered:
                if not self._pending:
                    self._ordered.wait(1.0)
                    continue
                left = self._pending[0][2] - time.monotonic()
                if left > 0:
                    self._ordered.wait(left)
                    continue
                item = heapq.heappop(self._pending)
            try:
                self._apply(*item[3:])
            except Exception:
                LOG.exception('Events of a %s change lost', item[5])

    def _apply(self, baseline, event_type, plural, obj):
        """Recompute the VM's facts from the objects as the events say.

        The objects come from the events, never from the cache, whose
        store may already hold a later state than the event at hand.
        """
        kind = _KINDS.get(plural)
        if kind is None:
            return
        meta = obj['metadata']
        namespace = meta.get('namespace')
        seen = self._seen[kind]
        if event_type == 'DELETED':
            seen.pop((namespace, meta['name']), None)
        else:
            seen[namespace, meta['name']] = obj
        name = _owner(obj) if kind == 'dv' else meta['name']
        if name is None:
            return
        vm = self._seen['vm'].get((namespace, name))
        facts = None if vm is None else changes.facts(
            vm, self._seen['vmi'].get((namespace, name)), self._trays(vm))
        old = self._facts.get((namespace, name))
        if facts is None:
            self._facts.pop((namespace, name), None)
        else:
            self._facts[namespace, name] = facts
        if not baseline:
            source = vm if vm is not None else obj if kind == 'vm' else None
            where = (namespace, None if source is None else
                     source['metadata'].get('labels') or {})
            for rank, change in enumerate(changes.events(old, facts)):
                self._emit((_rv(obj), rank), change, where)

    def reaches(self, sub, where):
        """Whether ``sub``'s owner may now read a VM ``where`` is.

        :param where: ``(namespace, labels)`` of the VM; a namespace of
            None (a resource of no namespace) only an owner who reaches
            every namespace may read, labels of None only one who reaches
            any VM's.
        """
        if self.accounts is None or not sub.owner:
            return True
        try:
            account = self.accounts.account(sub.owner, sub.owner_groups)
        except accountsfile.AccountsError:
            return False
        return account is not None and account.reaches(*where)

    def _wanted(self, sub, record, where):
        return sub.wants(record['MessageId'],
                         record['OriginOfCondition']['@odata.id']) and \
            self.reaches(sub, where)

    def _emit(self, key, change, where):
        record = resourceevent.record(
            change.message_id, change.args, change.origin,
            '%d.%d' % key, _now())
        with self._lock:
            self._buffer.append((key, record, where))
            for listener in self._listeners:
                listener(key, record, where)
            if not self.elector.leading():
                self._stop_senders()
                return
            for sender in self._senders.values():
                if self._wanted(sender.sub, record, where):
                    sender.offer(key, record)

    def listen(self, listener):
        """Call ``listener(key, record, where)`` with every later event.

        :returns: the buffered ``(key, record, where)`` before it.
        """
        with self._lock:
            self._listeners.add(listener)
            return list(self._buffer)

    def unlisten(self, listener):
        with self._lock:
            self._listeners.discard(listener)

    # the leader (the elector's thread)

    def _stop_senders(self):
        for sub_id, sender in self._senders.items():
            self._floors[sub_id] = max(self._floors.get(sub_id, (0, 0)),
                                       sender.done)
            for outcome, count in sender.counts.items():
                self._gone[outcome] += count
            sender.stop()
        self._senders = {}

    def _lead(self, checkpoint):
        with self._lock:
            self._stop_senders()
            for sub_id, key in checkpoint.items():
                if isinstance(key, list):
                    self._floors[sub_id] = max(
                        self._floors.get(sub_id, (0, 0)), tuple(key))

    def _checkpoint(self):
        with self._lock:
            return {sub_id: list(sender.done)
                    for sub_id, sender in self._senders.items()}

    def _refresh(self):
        """Start a sender for each new subscription, stop removed ones."""
        subs = {sub.id: sub for sub in self.store.read()}
        with self._lock:
            if not self.elector.leading():
                return
            for sub_id in set(self._senders) - set(subs):
                self._senders.pop(sub_id).stop()
            for sub_id in set(subs) - set(self._senders):
                sub = subs[sub_id]
                floor = max((sub.since, sys.maxsize),
                            self._floors.get(sub_id, (0, 0)))
                sender = delivery.Sender(sub, self.settings, self.policy(),
                                         self.elector.leading, floor,
                                         self.pool)
                self._senders[sub_id] = sender
                for key, record, where in self._buffer:
                    if self._wanted(sub, record, where):
                        sender.offer(key, record)

    # requests

    def test_event(self, record, where=(None, None)):
        """Queue ``record`` for every subscription that wants it.

        Sent by the process that got the request (whether it leads or
        not), through a queue per subscription of its own, by its pool.

        :param where: ``(namespace, labels)`` of the VM of the System the
            record's origin names; None: the event reaches only owners
            who reach every VM.
        """
        subs = self.store.list()  # Redfish errors for the request
        with self._lock:
            current = {sub.id: sub for sub in subs}
            for sub_id in list(self._testers):
                if self._testers[sub_id].sub != current.get(sub_id):
                    tester = self._testers.pop(sub_id)
                    self._gone.update(tester.counts)
                    tester.stop()
            key = (0, next(self._test_keys))
            for sub in subs:
                if not self._wanted(sub, record, where):
                    continue
                tester = self._testers.get(sub.id)
                if tester is None:
                    tester = self._testers[sub.id] = delivery.Sender(
                        sub, self.settings, self.policy(), lambda: True,
                        (0, 0), self.pool)
                tester.offer(key, record)

    def metrics_text(self):
        with self._lock:
            counts = collections.Counter(self._gone)
            queued = 0
            for sender in itertools.chain(self._senders.values(),
                                          self._testers.values()):
                counts.update(sender.counts)
                queued += sender.queued()
            leading = int(self.elector.leading())
        lines = ['# HELP sushy_kubevirt_events_total Events by outcome '
                 '(delivered, retried, failed, dropped on a full queue).',
                 '# TYPE sushy_kubevirt_events_total counter']
        lines += ['sushy_kubevirt_events_total{outcome="%s"} %d'
                  % (outcome, counts[outcome])
                  for outcome in delivery.OUTCOMES]
        lines += ['# HELP sushy_kubevirt_events_leader 1 while this process '
                  '(the candidate) sends the events.',
                  '# TYPE sushy_kubevirt_events_leader gauge',
                  'sushy_kubevirt_events_leader{candidate="%s"} %d'
                  % (self.elector.identity, leading),
                  '# HELP sushy_kubevirt_events_queued Events waiting in '
                  'the subscriber queues.',
                  '# TYPE sushy_kubevirt_events_queued gauge',
                  'sushy_kubevirt_events_queued %d' % queued]
        return '\n'.join(lines) + '\n'
