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

"""Redfish Storage, Drives and Volumes of a System, from its VM's disks.

One Storage subsystem per disk bus (virtio, sata, scsi, usb), with the
same ids as SimpleStorage, each holding one StorageController. Every disk
is a Drive; every non-optical disk of known size is also a Volume (a raw
device) of that size (sushy, and so Ironic's inspection, cannot sort a
Volume without CapacityBytes). ``MediaType`` is null: the medium behind a
PVC is unknown, and Drive.MediaType knows only HDD, SSD and SMR; a CD-ROM's
Description says it is optical. A disk of unknown size has
``CapacityBytes: null`` and says why in Description.

The ``before`` handlers of :data:`sushy_kubevirt.plugin.EXTENSION_POINTS`
serve these for a systems driver with ``get_disks``; other drivers keep
sushy-tools' stock views.
"""

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.kubevirt import disks
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import odata

#: Drive.Protocol per KubeVirt bus (virtio-blk is a PCIe function).
PROTOCOLS = {'virtio': 'PCIe', 'sata': 'SATA', 'scsi': 'SAS',
             'usb': 'USB'}
_METHOD = 'get_disks'


def _base(identity, bus=None):
    path = '/redfish/v1/Systems/%s/Storage' % odata.segment(identity)
    return path if bus is None else '%s/%s' % (path, odata.segment(bus))


def _member(path, kind, disk):
    """The URI of ``disk``'s Drive or Volume under Storage ``path``."""
    return '%s/%s/%s' % (path, kind, odata.segment(disk.name))


def _status(state='Enabled'):
    return {'State': state, 'Health': 'OK'}


def _protocol(bus):
    return PROTOCOLS.get(bus, 'OEM')


def collection(identity, disk_list):
    members = [{'@odata.id': _base(identity, bus)}
               for bus in disks.buses(disk_list)]
    return {
        '@odata.type': '#StorageCollection.StorageCollection',
        '@odata.id': _base(identity),
        'Name': 'Storage Collection',
        'Members@odata.count': len(members),
        'Members': members,
    }


def storage(identity, bus, on_bus):
    path = _base(identity, bus)
    return {
        '@odata.type': '#Storage.v1_9_0.Storage',
        '@odata.id': path,
        'Id': bus,
        'Name': '%s storage' % bus,
        'Status': dict(_status(), HealthRollup='OK'),
        'StorageControllers': [{
            '@odata.id': path + '#/StorageControllers/0',
            'MemberId': '0',
            'Name': '%s controller' % bus,
            'Status': _status(),
            'SupportedDeviceProtocols': [_protocol(bus)],
        }],
        'Drives': [{'@odata.id': _member(path, 'Drives', d)}
                   for d in on_bus],
        'Drives@odata.count': len(on_bus),
        'Volumes': {'@odata.id': path + '/Volumes'},
    }


def _unknown_size(disk):
    return ('Capacity unknown: a %s volume does not state its size'
            % (disk.source or 'missing'))


def drive(identity, bus, disk):
    path = _base(identity, bus)
    body = {
        '@odata.type': '#Drive.v1_9_0.Drive',
        '@odata.id': _member(path, 'Drives', disk),
        'Id': disk.name,
        'Name': disk.name,
        'CapacityBytes': disk.capacity,
        # Unknown: a PVC's medium is not visible to the VM (and the
        # schema has no optical value); null says so.
        'MediaType': None,
        'Protocol': _protocol(bus),
        'Status': _status(),
        'Links': {'Volumes': []},
    }
    if disk.kind == disks.OPTICAL:
        body['Description'] = 'Optical drive (CD-ROM)'
    elif disk.capacity is not None:
        body['Links']['Volumes'] = [
            {'@odata.id': _member(path, 'Volumes', disk)}]
    if disk.kind == 'lun':
        body['Description'] = 'SCSI LUN'
    if disk.capacity is None:
        note = _unknown_size(disk)
        body['Description'] = '%s; %s' % (body['Description'], note) \
            if 'Description' in body else note
    return body


def _volumes(on_bus):
    return [d for d in on_bus
            if d.kind != disks.OPTICAL and d.capacity is not None]


def volume_collection(identity, bus, on_bus):
    path = _base(identity, bus) + '/Volumes'
    members = [{'@odata.id': _member(_base(identity, bus), 'Volumes', d)}
               for d in _volumes(on_bus)]
    return {
        '@odata.type': '#VolumeCollection.VolumeCollection',
        '@odata.id': path,
        'Name': '%s volumes' % bus,
        'Description': "The VM's disks of known size; none can be created "
                       'or deleted here',
        'Members@odata.count': len(members),
        'Members': members,
        # Required by Ironic's interop profile; no apply time is offered,
        # because a POST here is a 405.
        '@Redfish.OperationApplyTimeSupport': {
            '@odata.type': '#Settings.v1_3_5.OperationApplyTimeSupport',
            'SupportedValues': []},
    }


def volume(identity, bus, disk):
    path = _base(identity, bus)
    return {
        '@odata.type': '#Volume.v1_5_0.Volume',
        '@odata.id': _member(path, 'Volumes', disk),
        'Id': disk.name,
        'Name': disk.name,
        'CapacityBytes': disk.capacity,
        'VolumeType': 'RawDevice',
        'Status': _status(),
        'Links': {'Drives': [
            {'@odata.id': _member(path, 'Drives', disk)}]},
    }


# the handlers of the extension-point table

def _disks(app, identity):
    """The system's disks, or None when the stock view should answer."""
    if app.feature_set != 'full':
        return None
    systems = base.systems_driver(app, _METHOD)
    if systems is None:
        return None
    if api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    return systems.get_disks(identity)


def _on_bus(disk_list, bus):
    on_bus = disks.buses(disk_list).get(bus)
    if not on_bus:
        raise messages.RedfishError(
            'ResourceNotFound', 'Storage', bus, code=404)
    return on_bus


def _find(candidates, name, kind):
    for disk in candidates:
        if disk.name == name:
            return disk
    raise messages.RedfishError('ResourceNotFound', kind, name, code=404)


def serve_collection(app, identity):
    disk_list = _disks(app, identity)
    if disk_list is None:
        return None
    return base.json_response(collection(identity, disk_list))


def serve_storage(app, identity, storage_id):
    disk_list = _disks(app, identity)
    if disk_list is None:
        return None
    return base.json_response(storage(identity, storage_id,
                                      _on_bus(disk_list, storage_id)))


def serve_drive(app, identity, stg_id, drv_id):
    disk_list = _disks(app, identity)
    if disk_list is None:
        return None
    on_bus = _on_bus(disk_list, stg_id)
    return base.json_response(drive(identity, stg_id,
                                    _find(on_bus, drv_id, 'Drive')))


def serve_volumes(app, identity, storage_id):
    disk_list = _disks(app, identity)
    if disk_list is None:
        return None
    on_bus = _on_bus(disk_list, storage_id)
    if flask.request.method != 'GET':
        raise messages.RedfishError(
            'ActionNotSupported', 'creating a Volume', code=405,
            detail='Volumes are the VM disks; create none here',
            headers={'Allow': 'GET'})
    return base.json_response(volume_collection(identity, storage_id, on_bus))


def serve_volume(app, identity, stg_id, vol_id):
    disk_list = _disks(app, identity)
    if disk_list is None:
        return None
    on_bus = _on_bus(disk_list, stg_id)
    return base.json_response(volume(
        identity, stg_id, _find(_volumes(on_bus), vol_id, 'Volume')))
