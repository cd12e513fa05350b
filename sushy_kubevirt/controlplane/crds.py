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

"""The CustomResourceDefinitions of KubeVirt and CDI, from the real schemas.

The schema directory (``../shared/reference/crd-schemas`` in the source
tree) holds each CRD's ``openAPIV3Schema``; the names, scope and
subresources below are the upstream CRDs' (KubeVirt's virt-operator
``NewVirtualMachineCrd``/``NewVirtualMachineInstanceCrd``, CDI's
``datavolumes.cdi.kubevirt.io``): the VM and the DataVolume have a status
subresource, the VMI has none.
"""

import json
import pathlib

# name: (kind, singular, short names, status subresource)
DEFINITIONS = {
    'virtualmachines.kubevirt.io': (
        'VirtualMachine', 'virtualmachine', ['vm', 'vms'], True),
    'virtualmachineinstances.kubevirt.io': (
        'VirtualMachineInstance', 'virtualmachineinstance', ['vmi', 'vmis'],
        False),
    'datavolumes.cdi.kubevirt.io': (
        'DataVolume', 'datavolume', ['dv', 'dvs'], True),
}


def load(directory):
    """The CRD objects for every schema file in ``directory``."""
    crds = []
    for name, (kind, singular, short, status) in DEFINITIONS.items():
        path = pathlib.Path(directory) / (name + '.json')
        doc = json.loads(path.read_text())
        plural = name.split('.', 1)[0]
        version = {'name': doc['version'], 'served': True, 'storage': True,
                   'schema': {'openAPIV3Schema': doc['openAPIV3Schema']}}
        if status:
            version['subresources'] = {'status': {}}
        crds.append({
            'apiVersion': 'apiextensions.k8s.io/v1',
            'kind': 'CustomResourceDefinition',
            'metadata': {'name': name},
            'spec': {
                'group': doc['group'], 'scope': 'Namespaced',
                'names': {'plural': plural, 'singular': singular,
                          'kind': kind, 'listKind': kind + 'List',
                          'shortNames': short, 'categories': ['all']},
                'versions': [version]}})
    return crds
