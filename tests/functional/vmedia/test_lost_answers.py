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

"""An InsertMedia whose write was applied but its answer lost completes.

The simulator applies one of the InsertMedia's writes (the Secret or
DataVolume create, or the VM patch attaching it) and then cuts the
connection, or answers 504 as a timed-out server does. The InsertMedia
reads back what it made, knows it by its token and goes on: 204, the VM
uses the DataVolume, and no DataVolume or Secret is left unused.
"""

import pytest
from tests import backend

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.simulator import cdi

SECRETS = ('', 'secrets')
#: (lost answer, with credentials): the write whose answer is lost.
CASES = [('secret', True), ('datavolume', False), ('datavolume', True),
         ('attach', False), ('attach', True)]
#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


def _path(step, machine):
    return {'secret': ('POST', '/secrets$'),
            'datavolume': ('POST', '/datavolumes$'),
            'attach': ('PATCH', '/virtualmachines/%s$' % machine.name)}[step]


def unused(machine):
    """The machine's tray DataVolumes and Secrets that nothing uses."""
    store = machine.sim.store
    vm = machine.vm()
    dvs = [dv for dv in store.list(cdi.DV_RT, 'default')[0]
           if media.owner(dv) == (machine.name, vm['metadata']['uid'])]
    secrets = [s for s in store.list(store.resource(*SECRETS), 'default')[0]
               if media.owner(s) == (machine.name, vm['metadata']['uid'])]
    refs = {fields.get(dv, 'spec', 'source', 'http', 'secretRef')
            for dv in dvs}
    return ([dv['metadata']['name'] for dv in dvs
             if not media.uses(vm, dv['metadata']['name'])] +
            [s['metadata']['name'] for s in secrets
             if s['metadata']['name'] not in refs])


@pytest.mark.parametrize('form', [None, 504], ids=['cut', '504'])
@pytest.mark.parametrize('step, credentials', CASES,
                         ids=['%s-%s' % (s, 'credentials' if c else
                                         'anonymous') for s, c in CASES])
def test_an_insert_whose_answer_is_lost_completes(machine, images, sim,
                                                  step, credentials, form):
    image = images.add('lost-%s.iso' % machine.name)
    extra = {'UserName': 'u', 'Password': 'p'} if credentials else {}
    method, path = _path(step, machine)
    rule = sim.faults.lose_answer(form, method=method, path=path)
    try:
        answer = machine.insert(image, **extra)
    finally:
        sim.faults.remove(rule)
    assert rule.hits == 1, 'the answer was not lost'
    assert answer.status_code == 204, answer.text
    assert unused(machine) == []
    dv = machine.dv()
    assert media.uses(machine.vm(), dv['metadata']['name'])
    if credentials:
        secret = machine.sim.store.get(
            machine.sim.store.resource(*SECRETS), 'default',
            dv['spec']['source']['http']['secretRef'])
        token = media.ANNOTATION_INSERT
        assert secret['metadata']['annotations'][token] == \
            dv['metadata']['annotations'][token]
    state = machine.wait_media(Inserted=True, timeout=30)
    assert state['Image'] == image
