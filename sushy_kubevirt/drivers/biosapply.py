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

"""Fold pending BIOS settings into the current ones after a boot.

A Settings PATCH or ResetBios is pending until a VMI with another uid
than the one running then exists (see ``kubevirt.bios``); reads show the
new values from that moment. :class:`Applier` is a Cluster VMI handler
that then writes them as current with a guarded patch, so that they stay
current once the VMI is gone. Several emulator processes may run it for
the same event: the patch is guarded by the resourceVersion, so the
second one re-reads the VM, finds nothing pending and stops.
"""

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import identity


class Applier:
    """``fn(event_type, vmi)`` for ``Cluster.add_vmi_handler``."""

    def __init__(self, cluster, logger):
        self._cluster = cluster
        self._logger = logger

    def __call__(self, event_type, vmi):
        if event_type == 'DELETED':
            return
        namespace, name = identity.key(vmi)
        vm = self._cluster.get_vm(namespace, name)
        if vm is None or not bios.consumed(vm, vmi):
            return
        try:
            guarded.guarded_patch(self._cluster, namespace, name,
                                  lambda vm: bios.apply_pending_ops(vm, vmi))
        except apierrors.ApiError as exc:
            self._logger.warning('Could not apply the pending BIOS settings '
                                 'of VM %s/%s: %s', namespace, name, exc)
        else:
            self._logger.info('Pending BIOS settings of VM %s/%s applied at '
                              'boot', namespace, name)
