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

"""One Chassis per namespace (``Application.chassis``).

sushy-tools' static driver has one configured Chassis that holds every
System. Here each namespace holding a System the request's account
reaches is a Chassis: its id is
:func:`sushy_kubevirt.kubevirt.identity.chassis_uuid` of the namespace
(the same in every process), its Name the namespace, which is also an
alias answered by a 307. A Chassis whose namespace the account does not
reach does not exist for it.

sushy-tools renders a System's ``Links.Chassis`` from ``chassis[:1]``;
during that request :attr:`NamespaceChassis.chassis` is the System's own
Chassis, so the hot read of a System never lists every VM.
"""

from sushy_tools.emulator.resources import base
from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.drivers import snapshot
from sushy_kubevirt import errormap
from sushy_kubevirt.kubevirt import identity


class NamespaceChassis(base.DriverBase):
    """``Application.chassis`` for the KubeVirt systems driver.

    :param systems: the KubeVirt systems driver (``find_vm``, ``placed``).
    """

    def __init__(self, config, logger, systems):
        super().__init__(config, logger)
        self._systems = systems

    @property
    def driver(self):
        return '<kubevirt-namespaces>'

    def _placed(self):
        """``{namespace: [system id, ...]}`` of what the request reaches."""
        def read():
            result = {}
            for namespace, system_id in self._systems.placed():
                result.setdefault(namespace, []).append(system_id)
            return result
        return snapshot.memoized(('chassis',), read)

    @property
    @errormap.translate
    def chassis(self):
        """Sorted ids of the reached namespaces' Chassis."""
        system = context.current().system
        if system is not None:
            return [self.of_system(system)]
        return sorted(identity.chassis_uuid(ns) for ns in self._placed())

    def of_system(self, ident):
        """The id of the Chassis holding System ``ident``."""
        vm = self._systems.find_vm(ident)
        return identity.chassis_uuid(identity.key(vm)[0])

    @errormap.translate
    def namespace(self, ident):
        """The namespace of Chassis ``ident`` (its id or its namespace).

        :raises error.AliasAccessError: ``ident`` is the namespace.
        :raises error.NotFound: no such Chassis for this request.
        """
        placed = self._placed()
        canonical = lookup.canonical_uuid(ident)
        for namespace in placed:
            if identity.chassis_uuid(namespace) == canonical:
                if canonical != ident:
                    raise error.AliasAccessError(canonical)
                return namespace
        if ident in placed:
            raise error.AliasAccessError(identity.chassis_uuid(ident))
        raise error.NotFound('Chassis %s not found' % ident)

    def uuid(self, ident):
        return identity.chassis_uuid(self.namespace(ident))

    def name(self, ident):
        return self.namespace(ident)

    def systems(self, ident):
        """Ids of the Systems in Chassis ``ident`` the request reaches."""
        return self._placed()[self.namespace(ident)]
