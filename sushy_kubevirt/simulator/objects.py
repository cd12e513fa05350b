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

import gc

from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import stamping
from sushy_kubevirt.simulator import storage
from sushy_kubevirt.simulator import virt
from sushy_kubevirt.simulator.virt import vm as simvm
from sushy_kubevirt.simulator.virt import vmstatus


def make_vm(name, namespace='default', *, run_strategy='Halted', cores=2,
            memory='2Gi', disk_size='10Gi', labels=None, efi=False,
            secure_boot=False, grace=180, mac=None, network='default',
            data_volume=True, boot_order=True, claim=False):
    """Build one defaulted VirtualMachine body (a plain dict).

    The root disk is a DataVolume ``<name>-root`` (a template); with
    ``claim``, a ``persistentVolumeClaim`` volume of the PVC ``<name>-root``
    (:func:`make_pvc`, made apart); with neither, a containerDisk.
    """
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
        # Pinned, as in a manifest that wants a stable identity: the
        # demo's System ids stay the same across restarts.
        'firmware': {'bootloader': bootloader,
                     'uuid': simvm.legacy_firmware_uuid(name),
                     'serial': name},
        'cpu': {'cores': cores, 'sockets': 1, 'threads': 1},
        'memory': {'guest': memory},
        'resources': {'requests': {'memory': memory}},
        'devices': {'disks': [disk], 'interfaces': [iface]},
    }
    if efi and secure_boot:
        domain['features'] = {'smm': {'enabled': True}}
    if claim:
        volume = {'name': 'root', 'persistentVolumeClaim': {
            'claimName': root}}
    elif data_volume:
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
    if data_volume and not claim:
        vm['spec']['dataVolumeTemplates'] = [{
            'metadata': {'name': root},
            'spec': {'source': {'blank': {}},
                     'storage': {'resources': {
                         'requests': {'storage': disk_size}}}},
        }]
    return vm


def make_pvc(name, namespace='default', size='10Gi'):
    """A PersistentVolumeClaim body of ``size`` (ReadWriteOnce)."""
    return {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
            'metadata': {'name': name, 'namespace': namespace},
            'spec': {'accessModes': ['ReadWriteOnce'],
                     'volumeMode': 'Filesystem',
                     'resources': {'requests': {'storage': size}}}}


def namespace_names(namespaces):
    if namespaces <= 1:
        return ['default']
    return ['ns-%03d' % i for i in range(namespaces)]


def seed(sim, vms, namespaces, pvc_roots=False):
    """Create ``vms`` Halted VMs spread over ``namespaces`` namespaces.

    Each VM comes with its imported root DataVolume and bound PVC (with
    ``pvc_roots``: a bound PVC alone, which its ``persistentVolumeClaim``
    volume names), so the cluster looks settled rather than freshly
    created. The first VM of
    each namespace is created through the store (no HTTP, no admission:
    bodies are already defaulted), and the controllers react to it as to
    any write. A store that can ``load`` (the simulator's) gets the others
    as copies of that one under their own names, uids and times
    (``stamping``), committed as a restore: one resourceVersion each,
    indexed by the controllers, with nothing for them to reconcile.
    """
    store = sim.store
    ns_rt = store.resource('', 'namespaces')
    names = namespace_names(namespaces)
    for ns in names:
        if store.try_get(ns_rt, None, ns) is None:
            store.create(ns_rt, {'apiVersion': 'v1', 'kind': 'Namespace',
                                 'metadata': {'name': ns}})
    # The cyclic garbage collector would rescan the growing store again
    # and again (quadratic); JSON-like objects hold no cycles.
    collecting = gc.isenabled()
    gc.disable()
    try:
        _seed_vms(store, vms, names, pvc_roots)
    finally:
        if collecting:
            gc.enable()


def _seed_vms(store, vms, names, pvc_roots=False):
    load = getattr(store, 'load', None)
    prototypes, batch = {}, []
    for i in range(vms):
        ns, name = names[i % len(names)], 'vm-%05d' % i
        if load is not None and ns in prototypes:
            batch.extend(_stamp(prototypes[ns], ns, name))
            if len(batch) >= LOAD_BATCH:
                load(batch)
                batch = []
            continue
        created = _create(store, ns, name, pvc_roots)
        if load is not None:
            prototypes[ns] = _prototype(store, created, ns, name)
    if batch:
        load(batch)


LOAD_BATCH = 3000


def _body(ns, name, claim=False):
    body = make_vm(name, ns, labels={'redfish-enabled': 'true'},
                   claim=claim)
    vmstatus.stopped_status(body)
    return body


def _create_bound_pvc(store, ns, name):
    pvc = make_pvc(name, ns)
    pvc['spec']['volumeName'] = 'pvc-%s-%s' % (ns, name)
    pvc['status'] = cdi.bound_status(pvc)
    return store.create(store.resource('', 'persistentvolumeclaims'), pvc)


def _create(store, ns, name, pvc_roots=False):
    """Create one VM with its volumes; return the (rt, obj) created."""
    body = _body(ns, name, pvc_roots)
    # Volumes first, so the VM controller finds them and creates none.
    pvcs = [_create_bound_pvc(store, ns, '%s-root' % name)] \
        if pvc_roots else []
    dvs = [cdi.create_settled(store, ns, template)
           for template in body['spec'].get('dataVolumeTemplates', ())]
    vm_rt = store.resource(virt.GROUP, 'virtualmachines')
    vm = store.create(vm_rt, body)
    for dv in dvs:
        cdi.adopt(store, dv, vm)
    pvc_rt = store.resource('', 'persistentvolumeclaims')
    return [(pvc_rt, pvc) for pvc in pvcs] + \
        [(cdi.DV_RT, dv) for dv in dvs] + [(vm_rt, vm)]


def _prototype(store, created, ns, name):
    """Templates of the stored DataVolumes, PVCs and VM of ``name``."""
    pvc_rt = store.resource('', 'persistentvolumeclaims')
    objs = []   # owners first: the VM, then each DataVolume and its PVC
    for rt, obj in reversed(created):
        objs.append((rt, store.get(rt, ns, obj['metadata']['name'])))
        if rt.key == cdi.DV_RT.key:
            objs.append((pvc_rt, store.get(pvc_rt, ns,
                                           obj['metadata']['name'])))
    tokens = _name_tokens(ns, name)
    uids = [obj['metadata']['uid'] for _rt, obj in objs]
    return ([(rt, stamping.Template(obj, tokens + uids))
             for rt, obj in objs], tokens, uids)


def _name_tokens(ns, name):
    """The strings ``make_vm`` derives from a VM's name."""
    return [name, simvm.legacy_firmware_uuid(name),
            virt.stable_mac(ns, name, 'default')]


def _stamp(prototype, ns, name):
    templates, tokens, uids = prototype
    table = dict(zip(tokens, _name_tokens(ns, name)))
    table.update((uid, storage.new_uid()) for uid in uids)
    return [(rt, template.stamp(table)) for rt, template in templates]
