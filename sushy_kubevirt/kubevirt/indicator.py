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

"""IndicatorLED of a VM, kept in the annotation :data:`ANNOTATION`.

A VM has no LED: the state is what a Redfish client last set, stored on the
VM so that every emulator process and replica reads the same value and a
restart loses nothing. Values are DMTF ``IndicatorLED`` values.
"""

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import refusals

ANNOTATION = 'sushy-kubevirt.io/indicator-led'
#: DMTF IndicatorLED values a client may set (as sushy-tools accepts).
STATES = ('Lit', 'Blinking', 'Off')
#: sushy-tools' state of an indicator never set.
DEFAULT = 'Lit'


class UnknownState(refusals.ModelError):
    """IndicatorLED other than Lit, Blinking or Off (400)."""


def indicator_led(vm, default=DEFAULT):
    """The VM's IndicatorLED; ``default`` when never set.

    None when the annotation holds something else (edited by hand): the
    property is then left out rather than rendered with a non-DMTF value.
    """
    value = fields.annotation(vm, ANNOTATION)
    if value is None:
        return default
    return value if value in STATES else None


def check_state(state):
    """:raises UnknownState: ``state`` is not a settable value."""
    if not isinstance(state, str) or state not in STATES:
        raise UnknownState('IndicatorLED %r is not one of: %s'
                           % (state, ', '.join(STATES)))


def indicator_led_ops(vm, state):
    """Ops storing ``state`` on the VM ([] when already stored)."""
    check_state(state)
    return fields.annotation_ops(vm, ANNOTATION, state)
