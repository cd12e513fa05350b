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

"""The Kubernetes resources this package reads and writes."""

import dataclasses
import typing


@dataclasses.dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self):
        return '%s/%s' % (self.group, self.version) if self.group \
            else self.version

    def path(self, namespace=None, name=None, subresource=None):
        """URL path of a collection, an object or an object's subresource."""
        parts = ['/apis/' + self.api_version if self.group
                 else '/api/' + self.version]
        if namespace is not None and self.namespaced:
            parts += ['namespaces', namespace]
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
        if subresource is not None:
            parts.append(subresource)
        return '/'.join(parts)


def key(namespace: typing.Optional[str], name: str) -> str:
    """The cache key of an object, as client-go's MetaNamespaceKeyFunc."""
    return '%s/%s' % (namespace, name) if namespace else name


def object_key(obj):
    meta = obj.get('metadata') or {}
    return key(meta.get('namespace'), meta.get('name'))


VM = Resource('kubevirt.io', 'v1', 'virtualmachines')
VMI = Resource('kubevirt.io', 'v1', 'virtualmachineinstances')
DATAVOLUME = Resource('cdi.kubevirt.io', 'v1beta1', 'datavolumes')
PVC = Resource('', 'v1', 'persistentvolumeclaims')
VM_ACTIONS = Resource('subresources.kubevirt.io', 'v1', 'virtualmachines')
VMI_ACTIONS = Resource('subresources.kubevirt.io', 'v1',
                       'virtualmachineinstances')
NAMESPACE = Resource('', 'v1', 'namespaces', namespaced=False)
SECRET = Resource('', 'v1', 'secrets')
CONFIGMAP = Resource('', 'v1', 'configmaps')
EVENT = Resource('', 'v1', 'events')
LEASE = Resource('coordination.k8s.io', 'v1', 'leases')
