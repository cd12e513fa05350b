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

"""A storage provisioner's part: PersistentVolumes for the claims.

The StorageClass ``STORAGE_CLASS`` (the default) names a provisioner CDI
knows (``kubevirt.io.hostpath-provisioner``: ReadWriteOnce, Filesystem)
and binds at once. kube-controller-manager's PV controller marks a claim
of that class for this provisioner, which makes a PV pre-bound to it (a
hostPath that is never written); the PV controller binds them. A PV its
claim released is deleted, as its reclaim policy says.
"""

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import storage

PVCS = storage.ResourceType('', 'v1', 'persistentvolumeclaims',
                            'PersistentVolumeClaim', custom=False)
PVS = storage.ResourceType('', 'v1', 'persistentvolumes', 'PersistentVolume',
                           namespaced=False, custom=False)
STORAGE_CLASSES = storage.ResourceType('storage.k8s.io', 'v1',
                                       'storageclasses', 'StorageClass',
                                       namespaced=False,
                                       status_subresource=False,
                                       custom=False)
PROVISIONER = 'kubevirt.io.hostpath-provisioner'
STORAGE_CLASS = 'sim-hostpath'
ANN_PROVISIONER = 'volume.kubernetes.io/storage-provisioner'
ANN_PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by'


def storage_class():
    return {'apiVersion': 'storage.k8s.io/v1', 'kind': 'StorageClass',
            'metadata': {'name': STORAGE_CLASS, 'annotations': {
                'storageclass.kubernetes.io/is-default-class': 'true'}},
            'provisioner': PROVISIONER, 'reclaimPolicy': 'Delete',
            'volumeBindingMode': 'Immediate'}


class Provisioner:
    """Makes and deletes the PVs of ``PROVISIONER``'s claims."""

    def __init__(self, store, scheduler):
        self.store = store
        self.scheduler = scheduler

    def on_event(self, event, rt, obj, old):
        if rt.key == PVCS.key and event != 'DELETED':
            meta = obj['metadata']
            self.scheduler.call_later(
                0, lambda: self._provision(meta['namespace'], meta['name']),
                key=('pvc', meta['namespace'], meta['name']))
        elif rt.key == PVS.key and event != 'DELETED':
            name = obj['metadata']['name']
            self.scheduler.call_later(0, lambda: self._reclaim(name),
                                      key=('pv', name))

    def _provision(self, ns, name):
        pvc = self.store.try_get(PVCS, ns, name)
        if pvc is None or pvc['spec'].get('volumeName') or \
                pvc['metadata'].get('deletionTimestamp') or \
                (pvc['metadata'].get('annotations') or {}).get(
                    ANN_PROVISIONER) != PROVISIONER:
            return
        uid = pvc['metadata']['uid']
        pv_name = 'pvc-%s' % uid
        if self.store.try_get(PVS, None, pv_name) is not None:
            return
        spec = pvc['spec']
        with apistatus.ignoring(409):
            self.store.create(PVS, {
                'apiVersion': 'v1', 'kind': 'PersistentVolume',
                'metadata': {'name': pv_name, 'annotations': {
                    ANN_PROVISIONED_BY: PROVISIONER}},
                'spec': {
                    'capacity': {'storage': spec['resources']['requests'][
                        'storage']},
                    'accessModes': spec.get('accessModes') or [
                        'ReadWriteOnce'],
                    'volumeMode': spec.get('volumeMode', 'Filesystem'),
                    'storageClassName': spec.get('storageClassName'),
                    'persistentVolumeReclaimPolicy': 'Delete',
                    'hostPath': {'path': '/var/lib/sim-hostpath/' + pv_name},
                    'claimRef': {'apiVersion': 'v1',
                                 'kind': 'PersistentVolumeClaim',
                                 'namespace': ns, 'name': name,
                                 'uid': uid}}})

    def _reclaim(self, name):
        pv = self.store.try_get(PVS, None, name)
        if pv is None or (pv.get('status') or {}).get('phase') != \
                'Released' or (pv['metadata'].get('annotations') or {}).get(
                    ANN_PROVISIONED_BY) != PROVISIONER:
            return
        with apistatus.ignoring(404, 409):
            self.store.delete(PVS, None, name, uid=pv['metadata']['uid'])
