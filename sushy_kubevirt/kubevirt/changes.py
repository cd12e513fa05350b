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

"""The Redfish facts of a VM, and the ResourceEvents between two of them.

:func:`facts` reduces a VM, its VMI and its tray DataVolumes to what its
Redfish System and VirtualMedia show; :func:`events` compares two such
snapshots and names the ResourceEvent messages that describe the change
(no event when nothing a client can read changed). Pure; no I/O.
"""

import collections
import json

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import firmware
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import power

SYSTEMS = '/redfish/v1/Systems/'

Facts = collections.namedtuple('Facts', 'system power boot other media')
#: One event to send: ``(message_id, args, origin URI)``.
Change = collections.namedtuple('Change', 'message_id args origin')

POWER_MESSAGES = {
    power.ON: 'ResourcePoweredOn',
    power.OFF: 'ResourcePoweredOff',
    power.POWERING_ON: 'ResourcePoweringOn',
    power.POWERING_OFF: 'ResourcePoweringOff',
    power.PAUSED: 'ResourcePaused',
}


def system_uri(system_id):
    return SYSTEMS + system_id


def media_uri(system_id, device):
    return '%s/VirtualMedia/%s' % (system_uri(system_id), device)


def _other(vm):
    """A digest of the rest of the System: CPUs, memory, NICs, disks.

    Boot order and CD-ROMs are left out: they are boot and media facts.
    """
    domain = dict(fields.domain(vm))
    devices = dict(domain.get('devices') or {})
    devices['disks'] = [
        {k: v for k, v in disk.items() if k != 'bootOrder'}
        for disk in devices.get('disks') or () if 'cdrom' not in disk]
    devices['interfaces'] = [
        {k: v for k, v in nic.items() if k != 'bootOrder'}
        for nic in devices.get('interfaces') or ()]
    domain['devices'] = devices
    return json.dumps(domain, sort_keys=True, default=str)


def facts(vm, vmi, trays):
    """The :class:`Facts` of ``vm``; ``trays`` maps device -> DataVolume."""
    states = []
    for device in sorted(trays):
        state = media.media_state(vm, trays[device])
        states.append((device, state.image, state.inserted, state.error))
    return Facts(
        system=identity.system_id(vm),
        power=power.power_state(vm, vmi),
        boot=(boot.boot_device(vm), boot.override_enabled(vm),
              firmware.boot_mode(vm)),
        other=_other(vm),
        media=tuple(states))


def events(old, new):
    """The :class:`Change` list from facts ``old`` to ``new`` (None: none).

    A System that appears (or gets another id) is ResourceCreated, one
    that goes ResourceRemoved; a new PowerState its ResourcePower*
    message; boot override, boot mode or hardware changes one
    ResourceChanged of the System; a tray whose image or inserted state
    changes a ResourceChanged of its VirtualMedia, and a failing import
    ResourceErrorsDetected (ResourceErrorsCorrected once it is over).
    """
    if old is None and new is None:
        return []
    if new is None:
        return [Change('ResourceRemoved', (), system_uri(old.system))]
    uri = system_uri(new.system)
    if old is None or old.system != new.system:
        gone = [] if old is None else [
            Change('ResourceRemoved', (), system_uri(old.system))]
        return gone + [Change('ResourceCreated', (), uri)]
    found = []
    if old.power != new.power:
        found.append(Change(POWER_MESSAGES[new.power], (new.system,), uri))
    if old.boot != new.boot or old.other != new.other:
        found.append(Change('ResourceChanged', (), uri))
    before = {m[0]: m for m in old.media}
    for device, image, inserted, error in new.media:
        was = before.get(device, (device, '', False, None))
        where = media_uri(new.system, device)
        if was[1:3] != (image, inserted):
            found.append(Change('ResourceChanged', (), where))
        if error and error != was[3]:
            found.append(Change('ResourceErrorsDetected',
                                ('Image', error), where))
        elif was[3] and not error:
            found.append(Change('ResourceErrorsCorrected',
                                ('Image', was[3]), where))
    return found
