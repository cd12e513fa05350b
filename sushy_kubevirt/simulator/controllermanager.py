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

"""kube-controller-manager's part of the cluster.

The garbage collector (``garbagecollector``), the namespace controller
(``namespaces``) and PVC protection (``pvcprotection``), on one
scheduler, writing as ``kube-controller-manager``.
Every simulator runs them, with or without KubeVirt and CDI.
"""

from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import garbagecollector
from sushy_kubevirt.simulator import namespaces
from sushy_kubevirt.simulator import pvcprotection
from sushy_kubevirt.simulator import storage

NAME = 'kube-controller-manager'


class ControllerManager:
    """The garbage collector, namespace controller and PVC protection."""

    def __init__(self, sim):
        store = storage.Manager(sim.store, NAME)
        _delays, self.scheduler = clock.for_controller(sim, {}, 'sim-kcm')
        self.handlers = (
            garbagecollector.OwnerGC(store, self.scheduler),
            namespaces.NamespaceController(
                store, self.scheduler, sim.store.resource('', 'namespaces')),
            pvcprotection.PVCProtection(store, self.scheduler))

    def on_event(self, event, rt, obj, old):
        for handler in self.handlers:
            handler.on_event(event, rt, obj, old)

    def on_loaded(self, rt, obj):
        """A restored object: the handlers only index it."""
        self.on_event('ADDED', rt, obj, None)

    def start(self, store):
        store.subscribe(self.on_event, loaded=self.on_loaded)
        self.scheduler.start()
        return self

    def stop(self):
        self.scheduler.stop()
