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

"""IndicatorLED driver: VM annotations for Systems, the stock store else.

sushy-tools keeps every IndicatorLED in a SQLite file of the emulator host
(``SUSHY_EMULATOR_STATE_DIR``), reopened on each access and written by the
first ``GET`` of each System. For a System served by the KubeVirt systems
driver this driver reads the state from the VM's annotation through the
watch cache (no API call) and writes it with one guarded patch, so workers
and replicas agree and a restart loses nothing. Any other identity (the
Chassis) goes to the stock driver, built on first use.

:mod:`sushy_kubevirt.plugin` builds it through
``KubeVirtDriver.indicators_driver``.
"""

from sushy_tools.emulator.resources import base
from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt import errormap
from sushy_kubevirt.kubevirt import identity as identity_mod
from sushy_kubevirt.kubevirt import indicator

#: sushy-tools' initial states by identity (defaults for unset VMs here).
LEDS_KEY = 'SUSHY_EMULATOR_INDICATOR_LEDS'


class KubeVirtIndicators(base.DriverBase):
    """``Application.indicators`` for the KubeVirt systems driver.

    :param systems: the KubeVirt systems driver (``find_vm``, ``cluster``).
    :param fallback: returns the stock indicators driver (called only for
        identities that are not served VMs).
    """

    def __init__(self, config, logger, systems, fallback):
        super().__init__(config, logger)
        self._systems = systems
        self._fallback = fallback

    @property
    def driver(self):
        return '<kubevirt-indicators>'

    def _find_vm(self, identity):
        """The served VM behind ``identity``, or None for another resource.

        sushy-tools passes a System's UUID; during a System request the
        request's own id (:attr:`.context.Request.system`) is used
        instead, so a VM served under ``<namespace>.<name>`` (its UUID
        shared with another VM) has its own LED.
        """
        identity = context.current().system or identity
        try:
            return self._systems.find_vm(identity)
        except error.NotFound:
            return None

    def _default(self, vm):
        initial = self._config.get(LEDS_KEY) or {}
        return initial.get(identity_mod.firmware_uuid(vm), indicator.DEFAULT)

    @errormap.translate
    def get_indicator_state(self, identity):
        """Lit, Blinking or Off (None: the annotation holds another value)."""
        vm = self._find_vm(identity)
        if vm is None:
            return self._fallback().get_indicator_state(identity)
        return indicator.indicator_led(vm, self._default(vm))

    @errormap.translate
    def set_indicator_state(self, identity, state):
        """Store ``state``; a value that is not Lit/Blinking/Off is a 400.

        The value is checked for every identity (the stock driver answers
        it with a 500).
        """
        indicator.check_state(state)
        vm = self._find_vm(identity)
        if vm is None:
            self._fallback().set_indicator_state(identity, state)
            return
        namespace, name = identity_mod.key(vm)
        preconditions.patch(
            self._systems.cluster, namespace, name,
            lambda vm: indicator.indicator_led_ops(vm, state))
