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

"""One Cluster per process, shared by the drivers of its configuration.

Every systems driver built from the same settings (sushy-tools builds a
driver per request) reads the same watch cache; a configuration that
changes stops the Cluster of the old one.
"""

import threading

from sushy_kubevirt.accounts import labelwatch
from sushy_kubevirt.accounts import lockout
from sushy_kubevirt.accounts import recorder
from sushy_kubevirt.accounts import secretaccounts
from sushy_kubevirt.drivers import afterboot
from sushy_kubevirt.drivers import logs
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.drivers import orphans
from sushy_kubevirt.events import service
from sushy_kubevirt.kube import cluster
from sushy_kubevirt.kubevirt import trust

_clusters = {}
_clusters_lock = threading.Lock()


def shared(settings, datavolumes, logger):
    """The process-wide Cluster for these settings (made on first use).

    One Cluster per process: when the settings changed (the emulator
    loaded another config), the Cluster built for the old ones is stopped
    (its threads and connections end) and a new one serves the new
    namespaces.
    """
    key = (settings, datavolumes)
    with _clusters_lock:
        stale = [_clusters.pop(k) for k in list(_clusters) if k != key]
        if key not in _clusters:
            made = cluster.Cluster(
                settings, datavolumes=datavolumes, indexers=lookup.INDEXERS,
                events=logs.EVENTS,
                configmaps=trust.CA_SELECTOR if datavolumes else None,
                claims=True)
            for handler in afterboot.handlers(made, logger):
                made.add_vmi_handler(handler)
            collector = datavolumes and orphans.factory(
                made, settings.vmedia, logger)
            if collector:
                made.add_companion(collector)
            _clusters[key] = made
        current = _clusters[key]
    for old in stale:
        logger.info('KubeVirt settings changed: stopping the watch cache '
                    'of namespaces %s', ', '.join(
                        old.settings.namespaces or ('(all)',)))
        old.stop()
    return current


def stop():
    """Stop every Cluster of this process (threads and connections)."""
    service.stop_services()
    secretaccounts.stop()
    lockout.flush()
    recorder.stop()
    labelwatch.stop()
    with _clusters_lock:
        clusters = list(_clusters.values())
        _clusters.clear()
    for each in clusters:
        each.stop()
