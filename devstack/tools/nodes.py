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

"""Ironic's devstack node VMs as KubeVirt VirtualMachines.

``create`` makes ``--count`` VMs ``<prefix>-0``... (the names Ironic's
``enroll_nodes`` gives its nodes, so ``redfish_system_id`` is
``/redfish/v1/Systems/<prefix>-N``) and writes the file ``enroll_nodes``
reads for virtual nodes, one line per VM::

    <mac>,<port id>[;<mac>,<port id>...] <port> <switch id> <switch info>

A VM that already exists is kept and its MACs are reported, so a re-stack
enrolls the same machines. ``delete`` removes them. Talks to the cluster
(or the simulator) with the official ``kubernetes`` client, no kubectl.
"""

import argparse
import hashlib
import os
import sys
import time

from kubernetes import client
from kubernetes.client import exceptions
from kubernetes import config
import urllib3

GROUP, VERSION, PLURAL = 'kubevirt.io', 'v1', 'virtualmachines'


def labels_of(selector):
    """``k=v,k2==v2`` -> dict; anything richer cannot label a new VM."""
    labels = {}
    for term in filter(None, (t.strip() for t in selector.split(','))):
        key, sep, value = term.replace('==', '=').partition('=')
        if not sep or not key or '!' in key or ' ' in term:
            raise ValueError('label selector %r is not key=value[,...]: the '
                             'created VMs could not match it' % selector)
        labels[key] = value
    return labels


def mac_of(namespace, name, index):
    """A stable MAC in QEMU's 52:54:00 range (as libvirt's devstack VMs)."""
    digest = hashlib.sha256(
        ('%s/%s/%d' % (namespace, name, index)).encode()).digest()
    return '52:54:00:%02x:%02x:%02x' % tuple(digest[:3])


def network_of(net_name, nad):
    if not nad:
        return {'name': net_name, 'pod': {}}
    return {'name': net_name, 'multus': {'networkName': nad}}


def vm_body(args, name, labels):
    """One Halted VirtualMachine with the IRONIC_VM_SPECS_* sizes."""
    nics = args.interfaces if args.network else 1
    binding = 'bridge' if args.network else 'masquerade'
    interfaces, networks = [], []
    for index in range(nics):
        nic = 'nic%d' % index
        interfaces.append({'name': nic, binding: {}, 'model': 'virtio',
                           'macAddress': mac_of(args.namespace, name, index),
                           **({'bootOrder': 2} if index == 0 else {})})
        networks.append(network_of(nic, args.network))
    memory = '%dMi' % args.ram_mib
    if args.boot_mode == 'uefi':
        bootloader = {'efi': {'secureBoot': args.secure_boot}}
    else:
        bootloader = {'bios': {}}
    domain = {
        'firmware': {'bootloader': bootloader},
        'cpu': {'cores': args.cpus, 'sockets': 1, 'threads': 1},
        'memory': {'guest': memory},
        'resources': {'requests': {'memory': memory}},
        'devices': {'disks': [{'name': 'root', 'bootOrder': 1,
                               'disk': {'bus': 'virtio'}}],
                    'interfaces': interfaces},
    }
    if args.boot_mode == 'uefi' and args.secure_boot:
        domain['features'] = {'smm': {'enabled': True}}
    storage = {'resources': {'requests': {'storage': '%dGi' % args.disk_gib}}}
    if args.storage_class:
        storage['storageClassName'] = args.storage_class
    return {
        'apiVersion': '%s/%s' % (GROUP, VERSION),
        'kind': 'VirtualMachine',
        'metadata': {'name': name, 'namespace': args.namespace,
                     'labels': dict(labels)},
        'spec': {
            'runStrategy': 'Halted',
            'dataVolumeTemplates': [{
                'metadata': {'name': '%s-root' % name},
                'spec': {'source': {'blank': {}}, 'storage': storage}}],
            'template': {
                'metadata': {'labels': {'kubevirt.io/domain': name}},
                'spec': {'domain': domain, 'networks': networks,
                         'volumes': [{'name': 'root', 'dataVolume': {
                             'name': '%s-root' % name}}]},
            },
        },
    }


def connect(kubeconfig, timeout):
    """An ApiClient once the kubeconfig exists and the API answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            api = config.new_client_from_config(config_file=kubeconfig)
            client.VersionApi(api).get_code(_request_timeout=5)
            return api
        except (OSError, config.ConfigException, exceptions.ApiException,
                urllib3.exceptions.HTTPError) as exc:
            if time.monotonic() > deadline:
                raise SystemExit('cluster of %s not reachable within %ss: %s'
                                 % (kubeconfig, timeout, exc))
        time.sleep(0.5)


def ensure_namespace(api, namespace):
    core = client.CoreV1Api(api)
    try:
        core.read_namespace(namespace)
    except exceptions.ApiException as exc:
        if exc.status == 403:
            return  # may still hold VMs we can create: they will tell
        if exc.status != 404:
            raise
        core.create_namespace({'apiVersion': 'v1', 'kind': 'Namespace',
                               'metadata': {'name': namespace}})


def macs_of(vm):
    interfaces = vm['spec']['template']['spec']['domain']['devices'].get(
        'interfaces', [])
    return [(i['macAddress'], i['name']) for i in interfaces
            if i.get('macAddress')]


def names(args):
    return ['%s-%d' % (args.prefix, i) for i in range(args.count)]


def create(args):
    labels = labels_of(args.label_selector)
    api = connect(args.kubeconfig, args.timeout)
    ensure_namespace(api, args.namespace)
    vms = client.CustomObjectsApi(api)
    lines = []
    for name in names(args):
        try:
            vm = vms.create_namespaced_custom_object(
                GROUP, VERSION, args.namespace, PLURAL,
                vm_body(args, name, labels))
            print('created VirtualMachine %s/%s' % (args.namespace, name))
        except exceptions.ApiException as exc:
            if exc.status != 409:
                raise
            vm = vms.get_namespaced_custom_object(
                GROUP, VERSION, args.namespace, PLURAL, name)
            print('kept existing VirtualMachine %s/%s'
                  % (args.namespace, name))
        nics = ';'.join('%s,%s-%s' % (mac, name, nic)
                        for mac, nic in macs_of(vm))
        if not nics:
            raise SystemExit('VirtualMachine %s/%s has no interface with a '
                             'macAddress' % (args.namespace, name))
        lines.append('%s %d 00:00:00:00:00:00 %s\n'
                     % (nics, args.port, args.bridge))
    tmp = args.macs_file + '.tmp'
    with open(tmp, 'w') as out:
        out.writelines(lines)
    os.replace(tmp, args.macs_file)
    print('wrote %d nodes to %s' % (len(lines), args.macs_file))


def delete(args):
    vms = client.CustomObjectsApi(connect(args.kubeconfig, args.timeout))
    for name in names(args):
        try:
            vms.delete_namespaced_custom_object(
                GROUP, VERSION, args.namespace, PLURAL, name)
            print('deleted VirtualMachine %s/%s' % (args.namespace, name))
        except exceptions.ApiException as exc:
            if exc.status != 404:
                raise


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('action', choices=('create', 'delete'))
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--namespace', required=True)
    parser.add_argument('--count', type=int, required=True)
    parser.add_argument('--prefix', default='node')
    parser.add_argument('--label-selector', default='')
    parser.add_argument('--cpus', type=int, default=1)
    parser.add_argument('--ram-mib', type=int, default=3072)
    parser.add_argument('--disk-gib', type=int, default=10)
    parser.add_argument('--interfaces', type=int, default=1,
                        help='NICs per VM on --network (1 on the pod '
                        'network)')
    parser.add_argument('--network', default='',
                        help='Multus NetworkAttachmentDefinition; empty: '
                        'the pod network')
    parser.add_argument('--storage-class', default='')
    parser.add_argument('--boot-mode', choices=('uefi', 'bios'),
                        default='uefi')
    parser.add_argument('--secure-boot', choices=('True', 'False'),
                        default='False')
    parser.add_argument('--macs-file', help='file enroll_nodes reads')
    parser.add_argument('--port', type=int, default=0,
                        help='second field of each line (the BMC port)')
    parser.add_argument('--bridge', default='brbm',
                        help='fourth field of each line (switch info)')
    parser.add_argument('--timeout', type=float, default=120)
    args = parser.parse_args(argv)
    args.secure_boot = args.secure_boot == 'True'
    if args.action == 'create' and not args.macs_file:
        parser.error('create needs --macs-file')
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        (create if args.action == 'create' else delete)(args)
    except ValueError as exc:
        raise SystemExit(str(exc))
    return 0


if __name__ == '__main__':
    sys.exit(main())
