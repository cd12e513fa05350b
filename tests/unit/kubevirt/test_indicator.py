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

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import indicator
from sushy_kubevirt.kubevirt import jsonpatch

KEY = indicator.ANNOTATION


def test_unset_reads_as_the_default():
    assert indicator.indicator_led(fx.vm()) == 'Lit'
    assert indicator.indicator_led(fx.vm(annotations={}), 'Off') == 'Off'


def test_stored_value_and_hand_edited_value():
    assert indicator.indicator_led(
        fx.vm(annotations={KEY: 'Blinking'})) == 'Blinking'
    assert indicator.indicator_led(fx.vm(annotations={KEY: 'lit'})) is None


@pytest.mark.parametrize('annotations', [None, {}, {KEY: 'Off'}])
def test_ops_store_the_state(annotations):
    vm = fx.vm(annotations=annotations)
    ops = indicator.indicator_led_ops(vm, 'Blinking')
    assert len(ops) == 1
    after = jsonpatch.apply(vm, ops)
    assert after['metadata']['annotations'][KEY] == 'Blinking'
    assert indicator.indicator_led_ops(after, 'Blinking') == []


@pytest.mark.parametrize('state', ['Unknown', 'lit', '', None, 1, ['Lit']])
def test_unknown_state_is_rejected(state):
    with pytest.raises(indicator.UnknownState) as exc:
        indicator.indicator_led_ops(fx.vm(), state)
    assert exc.value.status == 400
    assert 'Lit, Blinking, Off' in str(exc.value)
