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

"""A watch cache of the labelled objects of one namespace, per process.

The account Secrets (:mod:`.secretaccounts`), the session Secrets
(:mod:`.sessionstore`) and the security log's Events (:mod:`.securitylog`)
are each read from one :class:`~sushy_kubevirt.kube.informer.Informer` per
process, with its own connection: started on first use, again in a forked
child.
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

#: Seconds a request waits for the first list of the objects.
SYNC_WAIT = 10.0


class LabelWatch:
    """The ``resource`` objects of ``namespace`` labelled ``label=true``.

    :param cluster: the :class:`~sushy_kubevirt.kube.cluster.Cluster`
        whose settings (kubeconfig, rate) and accounting are used.
    :param transform: what the informer keeps of each object.
    """

    def __init__(self, cluster, namespace, label, resource=resources.SECRET,
                 transform=informer.strip):
        self.settings = cluster.settings
        self.accounting = cluster.accounting
        self.namespace = namespace
        self.label = label
        self.resource = resource
        self.transform = transform
        self._lock = threading.Lock()
        self._running = None
        self._stopped = False

    def _what(self):
        return '%s %s of namespace %s' % (
            self.label, self.resource.plural.capitalize(), self.namespace)

    def started(self):
        """``(live Api, informer)``, started in this process if need be.

        :raises apierrors.Unavailable: stopped.
        """
        with self._lock:
            if self._stopped:
                raise apierrors.Unavailable('The %s are no longer watched'
                                            % self._what())
            if self._running is None or self._running[0] != os.getpid():
                live = api.Api(
                    client.make_api_client(self.settings, watches=1),
                    limiter.TokenBucket(self.settings.qps,
                                        self.settings.burst),
                    self.accounting)
                cache = informer.Informer(
                    live, self.resource, dispatcher.Dispatcher(),
                    self.namespace, label_selector=self.label + '=true',
                    transform=self.transform,
                    name='%s %s in %s' % (
                        self.label, self.resource.plural.capitalize(),
                        self.namespace))
                cache.start()
                self._running = (os.getpid(), live, cache)
            return self._running[1:]

    def synced(self, wait=SYNC_WAIT):
        """``(live Api, informer)`` once the informer's list is in.

        :raises apierrors.Unavailable: not synced within ``wait`` seconds,
            or the server refuses the list or watch.
        """
        live, cache = self.started()
        if cache.refusal() is not None or not cache.wait_for_sync(
                wait) or cache.refusal() is not None:
            raise apierrors.Unavailable('The %s cannot be read'
                                        % self._what())
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


def shared(cluster, namespace, label, resource=resources.SECRET,
           transform=informer.strip):
    """This process's LabelWatch of ``label`` on ``resource`` in ``namespace``.

    One per label and resource: the one of other settings or another
    namespace is stopped.
    """
    key = (cluster.settings, namespace, label, resource.plural)
    with _shared_lock:
        stale = [_shared.pop(k) for k in list(_shared)
                 if k[2:] == key[2:] and k != key]
        if key not in _shared:
            _shared[key] = LabelWatch(cluster, namespace, label, resource,
                                      transform)
        current = _shared[key]
    for old in stale:
        old.stop()
    return current


def stop():
    """Stop every LabelWatch of this process."""
    with _shared_lock:
        watches = list(_shared.values())
        _shared.clear()
    for watch in watches:
        watch.stop()
