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

"""System identity: firmware UUID, serial number, aliases.

The Redfish System id is the VM's SMBIOS firmware UUID, in canonical
form. A VM is also reachable by its name and by ``<namespace>.<name>``
(aliases -> 307). A VM whose firmware UUID holds anything but a UUID is
served under ``<namespace>.<name>`` (:func:`system_id`): an id is always
one URI path segment of unreserved characters (RFC 3986), as Kubernetes
names are. Each namespace is one Chassis, whose id is
:func:`chassis_uuid`.
"""

import uuid

from sushy_kubevirt.kubevirt import fields

LEGACY_NAMESPACE_UUID = '6a1a24a1-4061-4607-8bf4-a3963d0c5895'
#: The UUIDv5 namespace of the Chassis ids (fixed: ids never change).
CHASSIS_NAMESPACE_UUID = 'a4c6f1de-3b52-5e0f-9d7c-2f8e61b0c935'


def legacy_firmware_uuid(name):
    """UUIDv5 of the VM ``name`` in KubeVirt's legacy namespace.

    Same value as KubeVirt's ``CalculateLegacyFirmwareUUID``, which
    virt-controller writes into an empty ``firmware.uuid``. It depends on
    the name only, so same-named VMs in two namespaces collide.
    """
    return str(uuid.uuid5(uuid.UUID(LEGACY_NAMESPACE_UUID), name))


def firmware_uuid(vm):
    """``domain.firmware.uuid`` in canonical lower-case form, or None.

    Falls back to :func:`legacy_firmware_uuid` of the VM name when the
    field is empty (a VM virt-controller has not defaulted yet). None
    when the field holds something that is not a UUID.
    """
    value = fields.get(fields.domain(vm), 'firmware', 'uuid')
    if not value:
        return legacy_firmware_uuid(vm['metadata']['name'])
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


def system_id(vm):
    """:func:`firmware_uuid`, else (no UUID there) :func:`alias`."""
    return firmware_uuid(vm) or alias(vm)


def chassis_uuid(namespace):
    """The Chassis id of ``namespace``: the same in every process."""
    return str(uuid.uuid5(uuid.UUID(CHASSIS_NAMESPACE_UUID), namespace))


def serial(vm):
    """``domain.firmware.serial`` (SMBIOS serial number) or None."""
    return fields.get(fields.domain(vm), 'firmware', 'serial')


def key(vm):
    """``(namespace, name)`` of a VM or VMI."""
    meta = vm['metadata']
    return meta.get('namespace', 'default'), meta['name']


def alias(vm):
    """The ``<namespace>.<name>`` id of a VM."""
    return '%s.%s' % key(vm)


def aliases(vm):
    """Names that redirect to the UUID: ``[name, 'namespace.name']``."""
    return [key(vm)[1], alias(vm)]


def _age_key(vm):
    created = fields.get(vm, 'metadata', 'creationTimestamp')
    return (created is None, created or '') + key(vm)


def pick(vms):
    """Choose one VM among VMs sharing a firmware UUID (None if empty).

    Rule: the oldest ``metadata.creationTimestamp`` wins (RFC 3339 UTC
    strings compare chronologically); ties and missing timestamps (sorted
    last) are broken by namespace, then name. The rule only needs the
    cached objects, so every process picks the same VM.
    """
    return min(vms, key=_age_key, default=None)
