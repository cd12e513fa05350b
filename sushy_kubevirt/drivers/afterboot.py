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

"""Finish what a boot consumed: a one-time boot, pending BIOS settings
or BIOS firmware.

``BootSourceOverrideEnabled: Once`` (see ``kubevirt.boot``) and a BIOS
Settings PATCH or ResetBios (see ``kubevirt.bios``) are stored on the VM
and consumed by the first VMI created after them (another uid). An
:class:`AfterBoot` is a Cluster VMI handler: when it sees such a VMI it
writes the outcome (the saved boot orders restored; the pending BIOS
settings made current) with a guarded patch, so that it stays once the
VMI is gone. Several emulator processes may run it for the same event:
the patch is guarded by the resourceVersion, so the second one re-reads
the VM, finds nothing left to do and stops. Each process then remembers
that VMI as finished: the VMI's next events (it changes several times as
it starts) find the cached VM stale until the watch delivers the patch,
and would each cost a refused patch and a read again. The informer
replays every VMI as ADDED when it starts, so what a boot consumed while
no emulator ran is finished at start-up.
"""

import collections
import threading

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import firmwareupdate
from sushy_kubevirt.kubevirt import identity


#: VMIs a handler remembers as finished, at most (the oldest forgotten).
FINISHED = 10000


class AfterBoot:
    """``fn(event_type, vmi)`` for ``Cluster.add_vmi_handler``.

    :param consumed: ``fn(vm, vmi) -> bool``, the VMI consumed the intent.
    :param build_ops: ``fn(vm, vmi) -> ops`` finishing it.
    :param what: what is finished, for the log.
    """

    def __init__(self, cluster, logger, consumed, build_ops, what):
        self._cluster = cluster
        self._logger = logger
        self._consumed = consumed
        self._build_ops = build_ops
        self._what = what
        self._finished = collections.OrderedDict()
        self._lock = threading.Lock()

    def _seen(self, uid):
        with self._lock:
            if uid in self._finished:
                self._finished.move_to_end(uid)
                return True
            return False

    def _finish(self, uid):
        with self._lock:
            self._finished[uid] = True
            while len(self._finished) > FINISHED:
                self._finished.popitem(last=False)

    def __call__(self, event_type, vmi):
        uid = vmi.get('metadata', {}).get('uid')
        if event_type == 'DELETED' or self._seen(uid):
            return
        namespace, name = identity.key(vmi)
        vm = self._cluster.get_vm(namespace, name)
        if vm is None or not self._consumed(vm, vmi):
            return
        try:
            guarded.guarded_patch(self._cluster, namespace, name,
                                  lambda vm: self._build_ops(vm, vmi))
        except apierrors.ApiError as exc:
            self._logger.warning('VM %s/%s: %s failed: %s', namespace, name,
                                 self._what, exc)
        else:
            if uid:
                self._finish(uid)
            self._logger.info('VM %s/%s: %s done', namespace, name,
                              self._what)


def handlers(cluster, logger):
    """The after-boot handlers a Cluster of the systems driver runs."""
    return (
        AfterBoot(cluster, logger, boot.once_consumed, boot.restore_once_ops,
                  'restoring the boot order after a one-time boot'),
        AfterBoot(cluster, logger, bios.consumed, bios.apply_pending_ops,
                  'applying the pending BIOS settings at boot'),
        AfterBoot(cluster, logger, firmwareupdate.consumed,
                  firmwareupdate.apply_pending_ops,
                  'applying the updated BIOS version at boot'),
    )
