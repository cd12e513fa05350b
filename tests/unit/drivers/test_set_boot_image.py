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

"""set_boot_image after an insert that another request's eject overtook."""

import pytest
from sushy_tools import error

from sushy_kubevirt.drivers import vmedia

VM = {'metadata': {'name': 'vm', 'namespace': 'ns', 'uid': 'u',
                   'resourceVersion': '1'}}


class Cluster:
    """The cache after the insert: its DataVolume as ``dv`` says."""

    def __init__(self, dv):
        self.dv = dv
        self.calls = []

    def get_datavolume(self, namespace, name):
        return self.dv

    def __getattr__(self, name):
        # Any API call (a patch, a live read) is recorded and refused.
        def call(*args, **kwargs):
            self.calls.append(name)
            raise AssertionError('unexpected call %s' % name)
        return call


class Systems:
    def __init__(self, cluster):
        self.cluster = cluster

    def find_vm(self, ident):
        return VM


def test_ejected_since_is_no_refusal():
    # Another request ejected the tray (deleting the DataVolume) after
    # insert_image attached it: the later eject stands, no 404.
    cluster = Cluster(None)
    vmedia.set_boot_image(Systems(cluster), 'vm', 'Cd', 'vm-vmedia-cd-3')
    assert cluster.calls == []


def test_foreign_datavolume_is_not_found():
    cluster = Cluster({'metadata': {'name': 'vm-vmedia-cd-3',
                                    'namespace': 'ns', 'labels': {}}})
    with pytest.raises(error.NotFound):
        vmedia.set_boot_image(Systems(cluster), 'vm', 'Cd',
                              'vm-vmedia-cd-3')
    assert cluster.calls == []
