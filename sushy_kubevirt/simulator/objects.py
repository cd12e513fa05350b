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

"""Realistic VM bodies and bulk seeding of the simulated cluster."""

from sushy_kubevirt.simulator import admission
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import virt
from sushy_kubevirt.simulator.virt import vmstatus


def make_vm(name, namespace='default', *, run_strategy='Halted', cores=2,
            memory='2Gi', disk_size='10Gi', labels=None, efi=False,
            secure_boot=False, grace=180, mac=None, network='default',
            data_volume=True, boot_order=True):
    """Build one defaulted VirtualMachine body (a plain dict)."""
    root = '%s-root' % name
    bootloader = ({'efi': {'secureBoot': secure_boot}} if efi
                  else {'bios': {}})
    disk = {'name': 'root', 'disk': {'bus': 'virtio'}}
    iface = {'name': 'default', 'bridge': {}, 'model': 'virtio',
             'macAddress': (mac or virt.stable_mac(namespace, name,
                                                       'default'))}
    if boot_order:
        disk['bootOrder'] = 1
        iface['bootOrder'] = 2
    domain = {
        'firmware': {'bootloader': bootloader},
        'cpu': {'cores': cores, 'sockets': 1, 'threads': 1},
        'memory': {'guest': memory},
        'resources': {'requests': {'memory': memory}},
        'devices': {'disks': [disk], 'interfaces': [iface]},
    }
    if efi and secure_boot:
        domain['features'] = {'smm': {'enabled': True}}
    if data_volume:
        volume = {'name': 'root', 'dataVolume': {'name': root}}
    else:
        volume = {'name': 'root',
                  'containerDisk': {'image': 'quay.io/example/disk:latest'}}
    vm = {
        'apiVersion': 'kubevirt.io/v1',
        'kind': 'VirtualMachine',
        'metadata': {'name': name, 'namespace': namespace,
                     'labels': dict(labels or {})},
        'spec': {
            'runStrategy': run_strategy,
            'template': {
                'metadata': {'labels': {'kubevirt.io/domain': name}},
                'spec': {
                    'terminationGracePeriodSeconds': grace,
                    'domain': domain,
                    'networks': [{'name': 'default',
                                  'pod': {}} if network == 'default' else
                                 {'name': 'default',
                                  'multus': {'networkName': network}}],
                    'volumes': [volume],
                },
            },
        },
    }
    if data_volume:
        vm['spec']['dataVolumeTemplates'] = [{
            'metadata': {'name': root},
            'spec': {'source': {'blank': {}},
                     'storage': {'resources': {
                         'requests': {'storage': disk_size}}}},
        }]
    return admission.default_vm(vm)


def namespace_names(namespaces):
    if namespaces <= 1:
        return ['default']
    return ['ns-%03d' % i for i in range(namespaces)]


def seed(sim, vms, namespaces):
    """Create ``vms`` Halted VMs spread over ``namespaces`` namespaces.

    Objects are created through the store (no HTTP, no admission: bodies
    are already defaulted), each VM with its imported root DataVolume and
    bound PVC, so the cluster looks settled rather than freshly created.
    """
    store = sim.store
    ns_rt = store.resource('', 'namespaces')
    names = namespace_names(namespaces)
    for ns in names:
        if store.try_get(ns_rt, None, ns) is None:
            store.create(ns_rt, {'apiVersion': 'v1', 'kind': 'Namespace',
                                 'metadata': {'name': ns}})
    vm_rt = store.resource(virt.GROUP, 'virtualmachines')
    for i in range(vms):
        ns = names[i % len(names)]
        body = make_vm('vm-%05d' % i, ns,
                       labels={'redfish-enabled': 'true'})
        vmstatus.stopped_status(body)
        # Volumes first, so the VM controller finds them and creates none.
        dvs = [cdi.create_settled(store, ns, template)
               for template in body['spec'].get('dataVolumeTemplates', ())]
        vm = store.create(vm_rt, body)
        for dv in dvs:
            cdi.adopt(store, dv, vm)
