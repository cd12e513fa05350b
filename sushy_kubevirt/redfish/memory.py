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

"""The Memory collection and resource of a System: the guest memory.

sushy-tools links ``Memory`` from every System (full feature set) and
serves nothing there. A KubeVirt guest has one memory region of the size
the VM template gives it (``memory.guest``, else the memory request or
limit); it is served as one DRAM module, ``GuestMemory``. A VM with no
memory size set has an empty collection.
"""

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import odata

MEMBER = 'GuestMemory'
_SYSTEM = '/redfish/v1/Systems/%s'


def collection(identity, mib):
    """The MemoryCollection of System ``identity`` (``mib``: its size)."""
    path = _SYSTEM % odata.segment(identity) + '/Memory'
    members = [{'@odata.id': path + '/' + MEMBER}] if mib else []
    return {
        '@odata.type': '#MemoryCollection.MemoryCollection',
        '@odata.id': path,
        'Name': 'Memory Collection',
        'Members@odata.count': len(members),
        'Members': members,
    }


def resource(identity, mib):
    """The Memory resource of the guest memory."""
    return {
        '@odata.type': '#Memory.v1_10_0.Memory',
        '@odata.id': _SYSTEM % odata.segment(identity) + '/Memory/' + MEMBER,
        'Id': MEMBER,
        'Name': 'Guest memory',
        'MemoryType': 'DRAM',
        'CapacityMiB': mib,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
    }


def _driver(identity):
    app = flask.current_app
    systems = base.systems_driver(app, 'get_memory_mib')
    if systems is None or app.feature_set != 'full' or \
            api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    return systems


@base.route('/redfish/v1/Systems/<identity>/Memory', GET=privileges.LOGIN)
def memory_collection(identity):
    """The guest memory as a MemoryCollection."""
    mib = _driver(identity).get_memory_mib(identity)
    return flask.jsonify(collection(identity, mib))


@base.route('/redfish/v1/Systems/<identity>/Memory/<memory_id>',
            GET=privileges.LOGIN)
def memory_resource(identity, memory_id):
    mib = _driver(identity).get_memory_mib(identity)
    if memory_id != MEMBER or not mib:
        raise error.NotFound()
    return flask.jsonify(resource(identity, mib))
