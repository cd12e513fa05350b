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

"""A watch cache of the labelled Secrets of one namespace, per process.

The account Secrets (:mod:`.secretaccounts`) and the session Secrets
(:mod:`.sessionstore`) are each read from one
:class:`~sushy_kubevirt.kube.informer.Informer` per process, with its
own connection: started on first use, again in a forked child.
"""

import os
import threading

from sushy_kubevirt.kube import api
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import dispatcher
from sushy_kubevirt.kube import informer
from sushy_kubevirt.kube import limiter
from sushy_kubevirt.kube import resources

#: Seconds a request waits for the first list of the Secrets.
SYNC_WAIT = 10.0


class SecretWatch:
    """The Secrets of ``namespace`` labelled ``label=true``.

    :param cluster: the :class:`~sushy_kubevirt.kube.cluster.Cluster`
        whose settings (kubeconfig, rate) and accounting are used.
    """

    def __init__(self, cluster, namespace, label):
        self.settings = cluster.settings
        self.accounting = cluster.accounting
        self.namespace = namespace
        self.label = label
        self._lock = threading.Lock()
        self._running = None
        self._stopped = False

    def _start(self):
        with self._lock:
            if self._stopped:
                raise apierrors.Unavailable('the %s cache is stopped'
                                            % self.label)
            if self._running is None or self._running[0] != os.getpid():
                live = api.Api(
                    client.make_api_client(self.settings, watches=1),
                    limiter.TokenBucket(self.settings.qps,
                                        self.settings.burst),
                    self.accounting)
                cache = informer.Informer(
                    live, resources.SECRET, dispatcher.Dispatcher(),
                    self.namespace, label_selector=self.label + '=true',
                    name='%s Secrets in %s' % (self.label, self.namespace))
                cache.start()
                self._running = (os.getpid(), live, cache)
            return self._running[1:]

    def synced(self, wait=SYNC_WAIT):
        """``(live Api, informer)`` once the informer's list is in.

        :raises apierrors.Unavailable: not synced within ``wait`` seconds,
            or the server refuses the list or watch.
        """
        live, cache = self._start()
        if cache.refusal() is not None or not cache.wait_for_sync(
                wait) or cache.refusal() is not None:
            raise apierrors.Unavailable('The %s Secrets of namespace %s '
                                        'cannot be read' % (self.label,
                                                            self.namespace))
        return live, cache

    def stop(self, timeout=10.0):
        with self._lock:
            self._stopped = True
            running, self._running = self._running, None
        if running is not None and running[0] == os.getpid():
            running[2].stop(timeout)
            running[1].close()


_shared = {}
_shared_lock = threading.Lock()


def shared(cluster, namespace, label):
    """This process's SecretWatch of ``label`` in ``namespace``.

    One per label: the one of other settings or another namespace is
    stopped.
    """
    key = (cluster.settings, namespace, label)
    with _shared_lock:
        stale = [_shared.pop(k) for k in list(_shared)
                 if k[2] == label and k != key]
        if key not in _shared:
            _shared[key] = SecretWatch(cluster, namespace, label)
        current = _shared[key]
    for old in stale:
        old.stop()
    return current


def stop():
    """Stop every SecretWatch of this process."""
    with _shared_lock:
        watches = list(_shared.values())
        _shared.clear()
    for watch in watches:
        watch.stop()
