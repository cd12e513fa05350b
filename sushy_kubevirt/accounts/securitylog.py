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
"""The security log: logins, refused logins, lockouts, refused privileges.

Each record is a core Kubernetes Event the emulator POSTs in the sessions'
namespace (:func:`note`), labelled
:data:`~sushy_kubevirt.kubevirt.logentries.LABEL` and about the fixed
object :data:`INVOLVED`; every process reads them from its own watch of
those labelled Events, so every worker serves the same log, and the API
server's Event TTL (one hour by default) bounds it. A record that cannot
be written is logged and dropped: it never fails the request.
"""

import datetime
import logging
import os
import socket
import threading

from sushy_kubevirt.kube import api
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import dispatcher
from sushy_kubevirt.kube import informer
from sushy_kubevirt.kube import limiter
from sushy_kubevirt.kube import resources
from sushy_kubevirt.kubevirt import logentries

LOG = logging.getLogger(__name__)
#: The object the records are about (it need not exist).
INVOLVED_NAME = 'sushy-kubevirt-security-log'
#: Seconds a read waits for the first list of the records.
SYNC_WAIT = 10.0


def involved(namespace):
    return {'apiVersion': 'v1', 'kind': 'Secret', 'name': INVOLVED_NAME,
            'namespace': namespace}


class SecurityLog:
    """The records of ``namespace``, read from this process's watch."""

    def __init__(self, cluster, namespace):
        self.cluster = cluster
        self.namespace = namespace
        self._lock = threading.Lock()
        self._running = None
        self._stopped = False

    def _start(self):
        with self._lock:
            if self._stopped:
                raise apierrors.Unavailable('the security log is stopped')
            if self._running is None or self._running[0] != os.getpid():
                settings = self.cluster.settings
                live = api.Api(
                    client.make_api_client(settings, watches=1),
                    limiter.TokenBucket(settings.qps, settings.burst),
                    self.cluster.accounting)
                cache = informer.Informer(
                    live, resources.EVENT, dispatcher.Dispatcher(),
                    self.namespace, label_selector=logentries.LABEL
                    + '=true', transform=logentries.slim,
                    name='security log Events in %s' % self.namespace)
                cache.start()
                self._running = (os.getpid(), live, cache)
            return self._running[1:]

    def events(self, wait=SYNC_WAIT):
        """Every cached record (no API call once synced).

        :raises apierrors.Unavailable: not synced within ``wait`` seconds,
            or the server refuses the list or watch.
        """
        _, cache = self._start()
        if cache.refusal() is not None or not cache.wait_for_sync(
                wait) or cache.refusal() is not None:
            raise apierrors.Unavailable('The security log Events of '
                                        'namespace %s cannot be read'
                                        % self.namespace)
        return cache.list()

    def write(self, reason, text):
        """POST a record; overlaid on this process's cache.

        :raises apierrors.ApiError: it could not be written.
        """
        live, cache = self._start()
        body = logentries.record(
            self.namespace, involved(self.namespace), reason, text,
            datetime.datetime.now(datetime.timezone.utc),
            instance='%s/%d' % (socket.gethostname(), os.getpid()),
            labels={logentries.LABEL: 'true'})
        cache.note_write(live.create(resources.EVENT, self.namespace, body))

    def stop(self, timeout=10.0):
        with self._lock:
            self._stopped = True
            running, self._running = self._running, None
        if running is not None and running[0] == os.getpid():
            running[2].stop(timeout)
            running[1].close()


_shared = {}
_shared_lock = threading.Lock()


def shared(cluster, namespace):
    """This process's SecurityLog of ``namespace`` (one: others stop)."""
    key = (cluster.settings, namespace)
    with _shared_lock:
        stale = [_shared.pop(k) for k in list(_shared) if k != key]
        if key not in _shared:
            _shared[key] = SecurityLog(cluster, namespace)
        current = _shared[key]
    for old in stale:
        old.stop()
    return current


def note(cluster, namespace, reason, text):
    """Record ``reason`` (a key of :data:`logentries.SECURITY`); never raises.

    ``cluster`` None (no Kubernetes behind the emulator) records nothing.
    """
    if cluster is None:
        return
    try:
        shared(cluster, namespace).write(reason, text)
    except Exception as exc:   # a record never fails the request
        LOG.warning('Cannot write the security log record %s: %s', reason,
                    exc)


def stop():
    """Stop every SecurityLog of this process."""
    with _shared_lock:
        logs = list(_shared.values())
        _shared.clear()
    for log in logs:
        log.stop()
