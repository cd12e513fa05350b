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

"""Guarded patches against a VM whose status keeps changing."""

import pytest

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded


class Churning:
    """A cluster whose VM changes between a read and the next patch.

    ``times`` times in a row, each a new resourceVersion.
    """

    def __init__(self, times):
        self.times = times
        self.rv = 1
        self.patches = []

    def get_vm(self, namespace, name):
        return {'metadata': {'resourceVersion': str(self.rv)}}

    get_vm_live = get_vm

    def patch_vm(self, namespace, name, ops):
        self.patches.append(ops)
        if self.times:
            self.times -= 1
            self.rv += 1
            raise apierrors.Conflict('the test failed', status=422)
        return {'metadata': {'resourceVersion': str(self.rv + 1)}}


def test_a_burst_of_status_writes_is_outlasted(monkeypatch):
    """Six conflicts in a row (a controller's status burst) still land."""
    pauses = []
    monkeypatch.setattr(guarded.time, 'sleep', pauses.append)
    cluster = Churning(times=6)
    guarded.guarded_patch(cluster, 'ns', 'vm', lambda vm: [
        {'op': 'add', 'path': '/spec/x', 'value': 1}])
    assert len(cluster.patches) == 7
    # Each patch tests the version it was computed from.
    assert [p[0]['value'] for p in cluster.patches] == [
        str(rv) for rv in range(1, 8)]
    # No pause after the first conflict; then short, capped pauses.
    assert len(pauses) == 5
    assert 0 < min(pauses) and max(pauses) <= guarded.PAUSE_CAP


def test_a_base_is_patched_once_and_never_retried():
    """With ``base`` (If-Match) a conflict is raised, not retried."""
    cluster = Churning(times=1)
    base = {'metadata': {'resourceVersion': '1'}}
    with pytest.raises(apierrors.Conflict):
        guarded.guarded_patch(cluster, 'ns', 'vm', lambda vm: [], base=base)
    # Nothing to change: the test is sent alone, of the base's version.
    assert cluster.patches == [[{'op': 'test', 'value': '1',
                                 'path': '/metadata/resourceVersion'}]]
    built = []
    guarded.guarded_patch(cluster, 'ns', 'vm', lambda vm: built.append(vm)
                          or [], base={'metadata': {'resourceVersion': '2'}})
    assert built == [{'metadata': {'resourceVersion': '2'}}]
