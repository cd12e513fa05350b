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

"""Three replicas split thirty namespaces, over HTTP: every System is
served by exactly one of them, whole namespaces at a time."""

import itertools
import subprocess

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness

from sushy_kubevirt.kubevirt import identity

SHARDS = 3
NAMESPACES = ['ns-%03d' % index for index in range(30)]


@pytest.fixture(scope='module')
def sim():
    simulator = backend.start(vms=60, namespaces=len(NAMESPACES))
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(scope='module')
def placed(sim):
    """System path -> the namespace of its VM."""
    return {'/redfish/v1/Systems/%s' % identity.firmware_uuid(vm):
            vm['metadata']['namespace'] for vm in sim.store.list(
                sim.store.resource('kubevirt.io', 'virtualmachines'))[0]}


def members(url, path):
    answer = requests.get(url + path, timeout=30)
    assert answer.status_code == 200, answer.text
    return {m['@odata.id'] for m in answer.json()['Members']}


@pytest.mark.parametrize('listed', [False, True],
                         ids=['cluster-wide', 'listed-namespaces'])
def test_every_system_is_served_by_exactly_one_replica(
        sim, placed, tmp_path_factory, listed):
    processes = []
    try:
        for index in range(SHARDS):
            tmp = tmp_path_factory.mktemp('shard%d' % index)
            extra = {'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES': NAMESPACES} \
                if listed else {}
            config = harness.write_config(
                tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
                SUSHY_EMULATOR_KUBEVIRT_SHARD='%d/%d' % (index, SHARDS),
                **extra)
            processes.append(harness.emulator_process(
                'sushy-kubevirt-emulator', config, tmp).start())
        urls = [process.wait_ready().url for process in processes]

        served = [set() for _ in urls]

        def complete():
            for index, url in enumerate(urls):
                served[index] = members(url, '/redfish/v1/Systems')
            return sum(map(len, served)) == len(placed)
        harness.wait_until(complete, what='every replica synced')

        assert set().union(*served) == set(placed)
        for one, other in itertools.combinations(served, 2):
            assert not one & other
        owners = {}
        for index, systems in enumerate(served):
            assert systems, 'shard %d serves nothing' % index
            for system in systems:
                owners.setdefault(placed[system], set()).add(index)
        assert all(len(shard) == 1 for shard in owners.values()), owners
        assert set(owners) == set(NAMESPACES)

        printed = subprocess.run(
            [harness.BIN + '/sushy-kubevirt-emulator', '--shard-of',
             str(SHARDS)] + NAMESPACES, capture_output=True, text=True,
            check=True).stdout.split()
        assert dict(zip(printed[::2], printed[1::2])) == {
            ns: '%d/%d' % (owners[ns].pop(), SHARDS) for ns in NAMESPACES}

        for index, url in enumerate(urls):
            chassis = members(url, '/redfish/v1/Chassis')
            assert len(chassis) == len({placed[s] for s in served[index]})
            own = sorted(served[index])[0]
            assert requests.get(url + own, timeout=30).status_code == 200
            for other in served[(index + 1) % SHARDS]:
                answer = requests.get(url + other, timeout=30)
                assert answer.status_code == 404, answer.text
    finally:
        for process in processes:
            process.stop()
