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

"""The KubeVirt corpus: what a VM and its media do, case by case.

Each case is ``fn(session, images)`` on a VM named after it
(``recorder.Session``); ``images`` is the URL of an image server with
``/good.iso``, ``/missing.iso`` (404) and ``/slow.iso`` (answers after
``SLOW`` seconds); ``images.https`` serves them over https with a
certificate of a private CA, ``images.ca_pem``. The cases cover the
subresources under every run strategy, a guest's own power-off and
crash, the patches the driver makes (boot order, a CD-ROM's insert,
eject and re-insert) on running and stopped VMs, and DataVolume imports
that succeed, fail or are deleted mid-way, from http and https.
"""

import functools

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import objects

CASES = {}
STRATEGIES = ('Always', 'RerunOnFailure', 'Manual', 'Halted', 'Once')
SLOW = 60.0
STOPPED_FIRST = ('Manual', 'Halted')


def case(name, **kwargs):
    def register(fn):
        CASES[name] = functools.partial(fn, **kwargs)
        return fn
    return register


def vm_body(name, run_strategy, volume=None):
    body = objects.make_vm(name, run_strategy=run_strategy, data_volume=False,
                           memory='128Mi', grace=5)
    spec = body['spec']['template']['spec']
    spec['domain'].pop('firmware')   # virt-api gives uuid and serial
    if volume:
        spec['domain']['devices']['disks'].append(
            {'name': 'data', 'disk': {'bus': 'virtio'}})
        spec['volumes'].append({'name': 'data',
                                'dataVolume': {'name': volume}})
    return body


def dv_body(name, url):
    return {'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
            'metadata': {'name': name},
            'spec': {'source': {'http': {'url': url}},
                     'storage': {'resources': {'requests': {
                         'storage': '1Gi'}}}}}


def _running(facts):
    return (facts['vmi'] or {}).get('phase') == 'Running' and (
        facts['vm'] or {}).get('printableStatus') == 'Running'


def _starts_running(s, strategy):
    s.create(vm_body(s.vm, strategy))
    if strategy in STOPPED_FIRST:
        s.observe()
        s.subresource('start')
    s.observe(until=_running)


for _strategy in STRATEGIES:
    @case('power_' + _strategy, strategy=_strategy)
    def case_power(s, images, strategy):
        """Every subresource from running, then from stopped."""
        _starts_running(s, strategy)
        s.subresource('start')
        s.subresource('pause', 'virtualmachineinstances')
        s.observe()
        s.subresource('unpause', 'virtualmachineinstances')
        s.observe()
        s.subresource('softreboot', 'virtualmachineinstances')
        s.observe()
        s.subresource('restart')
        s.observe()
        s.subresource('stop')
        s.observe()
        s.subresource('stop')
        s.subresource('restart')
        s.subresource('softreboot', 'virtualmachineinstances')
        s.subresource('pause', 'virtualmachineinstances')
        s.subresource('start')
        s.observe()

    @case('guest_off_' + _strategy, strategy=_strategy)
    def case_guest_off(s, images, strategy):
        """The guest powers off, then crashes, on its own."""
        _starts_running(s, strategy)
        s.guest_ends('Succeeded')
        if _running(s.observe()):
            s.guest_ends('Failed')
            s.observe()


@case('boot_order_running', running=True)
@case('boot_order_stopped', running=False)
def case_boot_order(s, images, running):
    """The driver's boot-device patch, then a (re)start applies it."""
    if running:
        _starts_running(s, 'Always')
    else:
        s.create(vm_body(s.vm, 'Halted'))
        s.observe()
    s.patch_vm('boot Pxe', lambda vm: boot.boot_device_ops(vm, 'Pxe'))
    s.observe()
    s.subresource('restart' if running else 'start')
    s.observe(vmi_devices=True)


@case('media_running', running=True)
@case('media_stopped', running=False)
def case_media(s, images, running):
    """Insert, restart, eject, restart: the driver's CD-ROM patches."""
    action = 'restart' if running else 'start'
    if running:
        _starts_running(s, 'Always')
    else:
        s.create(vm_body(s.vm, 'Halted'))
        s.observe()
    vm = s.read_vm()
    name = media.datavolume_name(vm, 'Cd')
    s.create_dv(media.datavolume_body(vm, 'Cd', images + '/good.iso'))
    s.patch_vm('insert', lambda vm: media.attach_ops(vm, 'Cd', name))
    s.observe()
    s.subresource(action)
    s.observe(vmi_devices=True)
    s.patch_vm('eject', lambda vm: media.detach_ops(vm, 'Cd'))
    s.delete_dv(name)
    s.observe()
    s.subresource('restart')
    s.observe(vmi_devices=True)


@case('reinsert_running')
def case_reinsert(s, images):
    """The same DataVolume name deleted and made again on a running VM.

    The running VMI's pod keeps the old claim (pvc-protection), so CDI
    cannot import the new one until the VM restarts.
    """
    _starts_running(s, 'Always')
    vm = s.read_vm()
    name = media.datavolume_name(vm, 'Cd')
    body = media.datavolume_body(vm, 'Cd', images + '/good.iso')
    s.create_dv(body)
    s.patch_vm('insert', lambda vm: media.attach_ops(vm, 'Cd', name))
    s.observe(until=lambda f: f['dv <name>'].get('phase') == 'Succeeded')
    s.subresource('restart')
    s.observe(until=lambda f: _running(f) and f['vmi']['new'])
    s.delete_dv(name)
    s.observe(until=lambda f: not f['dv <name>']['exists'])
    s.create_dv(body)
    s.observe()
    s.subresource('restart')
    s.observe()


@case('import_ok', path='/good.iso')
@case('import_404', path='/missing.iso')
def case_import(s, images, path):
    s.create_dv(dv_body(s.vm + '-dv', images + path))
    s.observe(until=lambda f: f['dv <name>'].get('phase') == 'Succeeded'
              or f['dv <name>'].get('restarted'))


@case('import_https_ca', trust='ca')
@case('import_https_insecure', trust='insecure')
@case('import_https_unverified', trust=None)
def case_import_https(s, images, trust):
    """An https server of a private CA: its CA given, no check, neither."""
    body = dv_body(s.vm + '-dv', images.https + '/good.iso')
    http = body['spec']['source']['http']
    if trust == 'ca':
        s.create_configmap({'apiVersion': 'v1', 'kind': 'ConfigMap',
                            'metadata': {'name': s.vm + '-ca'},
                            'data': {'ca.pem': images.ca_pem}})
        http['certConfigMap'] = s.vm + '-ca'
    elif trust == 'insecure':
        http['insecureSkipVerify'] = True
    s.create_dv(body)
    s.observe(until=lambda f: f['dv <name>'].get('phase') == 'Succeeded'
              or f['dv <name>'].get('restarted'))


@case('import_deleted')
def case_import_deleted(s, images):
    """A DataVolume deleted while its importer fetches."""
    name = s.vm + '-dv'
    s.create_dv(dv_body(name, images + '/slow.iso'))
    s.observe(until=lambda f: f['dv <name>'].get('phase') == 'Importing')
    s.delete_dv(name)
    s.observe(until=lambda f: not f['dv <name>']['exists'] and
              not f['dv <name>']['claim'])


for _strategy in ('Manual', 'Halted', 'RerunOnFailure'):
    @case('stopped_failing_import_' + _strategy, strategy=_strategy)
    def case_stopped_failing_import(s, images, strategy):
        """A stopped VM whose volume's import fails, then a start."""
        dv = s.vm + '-dv'
        s.create_dv(dv_body(dv, images + '/missing.iso'))
        s.create(vm_body(s.vm, strategy, volume=dv))
        if strategy == 'RerunOnFailure':
            # Started on creation: its VMI waits for the volume.
            s.observe(until=lambda f: f['vmi'] is not None
                      and f['dv <name>'].get('restarted'))
            s.subresource('stop')
        s.observe(until=lambda f: f['dv <name>'].get('restarted'))
        s.observe()
        s.subresource('start')
        s.observe()
