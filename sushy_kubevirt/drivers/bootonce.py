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

"""Restore the boot order after a one-time boot was consumed.

``BootSourceOverrideEnabled: Once`` is stored on the VM (see
``kubevirt.boot``); the first VMI created after it (another uid) consumed
it. :class:`Restorer` is a Cluster VMI handler: when it sees such a VMI it
restores the saved orders with a guarded patch. Several emulator
processes may run it for the same event: the patch is guarded by the
resourceVersion, so the second one re-reads the VM, finds nothing to
restore and stops. The informer replays every VMI as ADDED when it starts,
so an override consumed while no emulator ran is restored at start-up.
"""

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import identity


class Restorer:
    """``fn(event_type, vmi)`` for ``Cluster.add_vmi_handler``."""

    def __init__(self, cluster, logger):
        self._cluster = cluster
        self._logger = logger

    def __call__(self, event_type, vmi):
        if event_type == 'DELETED':
            return
        namespace, name = identity.key(vmi)
        vm = self._cluster.get_vm(namespace, name)
        if vm is None or not boot.once_consumed(vm, vmi):
            return
        try:
            guarded.guarded_patch(self._cluster, namespace, name,
                                  lambda vm: boot.restore_once_ops(vm, vmi))
        except apierrors.ApiError as exc:
            self._logger.warning('Could not restore the boot order of VM '
                                 '%s/%s after a one-time boot: %s',
                                 namespace, name, exc)
        else:
            self._logger.info('The boot order of VM %s/%s is restored '
                              'after a one-time boot', namespace, name)
