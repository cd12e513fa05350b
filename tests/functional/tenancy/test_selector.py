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

"""An account with a label selector reaches only the VMs it matches."""

import pytest
from tests.functional.events import receiver as receivermod
from tests.functional.tenancy import conftest

from sushy_kubevirt.kubevirt import identity

VMS = ('kubevirt.io', 'virtualmachines')
SUBSCRIPTIONS = '/redfish/v1/EventService/Subscriptions'


def _label(vm):
    vm['metadata'].setdefault('labels', {})['pool'] = 'ci'


def _cores(vm):
    domain = vm['spec']['template']['spec']['domain']
    domain.setdefault('cpu', {})['cores'] = 6


@pytest.fixture(scope='module')
def pool(sim):
    """System path -> VM name of OWN, the first labelled pool=ci."""
    items, _ = sim.store.list(sim.store.resource(*VMS), conftest.OWN)
    names = sorted(vm['metadata']['name'] for vm in items)
    sim.store.mutate(sim.store.resource(*VMS), conftest.OWN, names[0],
                     _label)
    return {'/redfish/v1/Systems/%s' % identity.firmware_uuid(
        sim.store.get(sim.store.resource(*VMS), conftest.OWN, name)): name
        for name in names}, names[0]


@pytest.fixture(scope='module')
def ci(pool, accounts_file, emulator):
    original = accounts_file.read_text()
    replacement = accounts_file.with_suffix('.ci')
    replacement.write_text(original + "  ci:\n    role: Operator\n"
                           "    namespaces: [%s]\n    selector: 'pool in "
                           "(ci)'\n" % conftest.OWN)
    replacement.replace(accounts_file)
    try:
        yield conftest.Client(emulator.url, 'ci')
    finally:
        replacement.write_text(original)
        replacement.replace(accounts_file)


def test_only_matching_vms_exist(ci, pool, clients):
    paths, labelled = pool
    listed = [m['@odata.id'] for m in
              ci.get('/redfish/v1/Systems').json()['Members']]
    assert [paths[p] for p in listed] == [labelled]
    for path, name in paths.items():
        assert ci.get(path).status_code == (200 if name == labelled
                                            else 404)


def test_events_follow_the_selector(sim, ci, pool):
    paths, labelled = pool
    with receivermod.Receiver() as receiver:
        answer = ci.request('POST', SUBSCRIPTIONS, json={
            'Destination': receiver.url, 'Protocol': 'Redfish',
            'RegistryPrefixes': ['ResourceEvent']})
        assert answer.status_code == 201, answer.text
        try:
            others = sorted(n for n in paths.values() if n != labelled)
            for name in others + [labelled]:
                sim.store.mutate(sim.store.resource(*VMS), conftest.OWN,
                                 name, _cores)
            mine = [p for p, n in paths.items() if n == labelled]
            # The others changed first: sent, they would be here first.
            receiver.wait(lambda r: r.matching(mine[0]))
            assert {e['OriginOfCondition']['@odata.id']
                    for e in receiver.events()} == set(mine)
        finally:
            ci.request('DELETE', answer.headers['Location'])
