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

"""The ceiling server answers what the emulator answers, byte for byte."""

import pytest

from sushy_kubevirt.bench import ceiling
from sushy_kubevirt.bench import cluster as cluster_mod
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import measure


@pytest.mark.timeout(120)
def test_ceiling_answers_the_emulators_bytes(tmp_path):
    plan = measure.Plan(workdir=str(tmp_path), vms=3, namespaces=1,
                        warm_deadline_s=30.0)
    cluster = cluster_mod.Cluster(plan.workdir, plan.vms, plan.namespaces)
    try:
        emu, _, ids = measure.start(plan, 'devserver', 'warm', cluster)
        try:
            limit = ceiling.start(emu, ids, plan.workdir)
            try:
                for ident in ids:
                    path = load.SYSTEM % ident
                    status, headers, body = ceiling._get(emu.port, path)
                    assert status == 200 and b'#ComputerSystem.' in \
                        body.encode()
                    assert ceiling._get(limit.port, path) == (
                        status, headers, body)
                assert ceiling._get(limit.port, '/nothing')[0] == 404
            finally:
                limit.stop()
        finally:
            emu.stop()
    finally:
        cluster.stop()
