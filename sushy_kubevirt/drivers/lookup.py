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

"""Find the VM behind a Redfish System id.

The canonical id is the VM's firmware UUID (lower case). A VM name and
``<namespace>.<name>`` are aliases answered by a 307 redirect to it. VMs
sharing one firmware UUID (KubeVirt's name-derived default UUID makes
same-named VMs in two namespaces collide) are resolved by
``kubevirt.identity.pick`` (oldest wins, then namespace, then name); each
other VM, and a VM whose firmware UUID is no UUID, is listed and served
under its ``<namespace>.<name>`` id instead (its name redirects there).

Ids mean the same for every user; a VM the request's account does not
reach (its namespace or labels, :meth:`.context.Request.reaches`)
is not listed and not found, not even redirected to.
"""

import uuid

from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import snapshot
from sushy_kubevirt.kubevirt import identity

#: The indexes of the cached VMs the lookup uses (``Cluster(indexers=)``):
#: ``uuid``, the canonical firmware UUID (or KubeVirt's name-derived
#: default while the field is empty; none when it holds no UUID, see
#: :func:`sushy_kubevirt.kubevirt.identity.firmware_uuid`), and ``name``.
INDEXERS = {
    'uuid': lambda vm: [u for u in [identity.firmware_uuid(vm)] if u],
    'name': lambda vm: [vm['metadata']['name']],
}


def canonical_uuid(text):
    """``text`` as a lower-case UUID string, or None if it is not one."""
    try:
        return str(uuid.UUID(text))
    except (TypeError, ValueError):
        return None


def reaches(namespace, labels):
    """The current request's reach, asked once per GET and namespace.

    With Kubernetes accounts each question is a SubjectAccessReview
    (unless cached); the lookup and the kept ETag ask the same one.
    """
    return snapshot.memoized(
        ('reaches', namespace, tuple(sorted(labels.items()))),
        lambda: context.current().reaches(namespace, labels))


def _reached(vm):
    meta = vm['metadata']
    return reaches(meta['namespace'], meta.get('labels') or {})


class Lookup:
    """Identity resolution over a Cluster's cached VMs.

    Results are memoized for the current request
    (:attr:`.context.Request.memo`).
    """

    def __init__(self, cluster, logger):
        self._cluster = cluster
        self._logger = logger
        self._reported = set()

    def _report(self, value, vms, chosen):
        keys = tuple(sorted(identity.alias(vm) for vm in vms))
        if keys in self._reported:
            return
        self._reported.add(keys)
        self._logger.warning(
            'VMs %s share firmware UUID %s; it identifies %s, the others '
            'are served as <namespace>.<name>', ', '.join(keys), value,
            identity.alias(chosen))

    def _by_uuid(self, value):
        # An index lookup (case-insensitive, name-derived default
        # included): never a scan of every VM.
        return self._cluster.find_vms('uuid', value.lower())

    def _chosen(self, value, vms):
        chosen = identity.pick(vms)
        if len(vms) > 1:
            self._report(value, vms, chosen)
        return chosen

    def placed(self):
        """``(placed, unreadable)``: where the readable systems are.

        ``(namespace, id)`` of every served VM that can be read, one per
        id, in the order of the Systems collection, and the
        ``Unreadable`` of each namespace that cannot.

        :raises apierrors.Unreadable: no namespace can be read.
        """
        vms, unreadable = self._cluster.list_readable_vms()
        groups = {}
        for vm in vms:
            groups.setdefault(identity.firmware_uuid(vm), []).append(vm)
        result = []
        # The VMs with no firmware UUID (None) last.
        for system_id, vms in sorted(groups.items(), key=lambda item: (
                item[0] is None, item[0] or '')):
            chosen = self._chosen(system_id, vms) if system_id else None
            if chosen is not None and _reached(chosen):
                result.append((identity.key(chosen)[0], system_id))
            result += sorted(((identity.key(vm)[0], identity.alias(vm))
                              for vm in vms
                              if vm is not chosen and _reached(vm)),
                             key=lambda pair: pair[1])
        return result, unreadable

    def count(self, reaches):
        """How many Systems :meth:`placed` lists to an account.

        ``reaches(namespace, labels)``: the account's reach, None when it
        reaches every VM. Counts the cached VMs, one System each, without
        naming them.

        :raises apierrors.Unreadable: no namespace can be read.
        """
        vms = self._cluster.list_readable_vms()[0]
        if reaches is None:
            return len(vms)
        return sum(1 for vm in vms if reaches(
            vm['metadata']['namespace'], vm['metadata'].get('labels') or {}))

    def systems(self):
        """``(ids, unreadable)``: :meth:`placed` without the namespaces."""
        placed, unreadable = self.placed()
        return [system_id for _, system_id in placed], unreadable

    def _by_alias(self, ident, vm):
        """The key of ``vm`` when ``ident`` is its id; 307 when an alias."""
        if not _reached(vm):
            return None
        system_id = identity.firmware_uuid(vm)
        if system_id is None or identity.key(vm) != identity.key(
                self._chosen(system_id, self._by_uuid(system_id) or [vm])):
            system_id = identity.alias(vm)
        if ident != system_id:
            raise error.AliasAccessError(system_id)
        return identity.key(vm)

    def _resolve(self, ident):
        system_id = canonical_uuid(ident)
        if system_id is not None:
            vms = self._by_uuid(system_id)
            chosen = self._chosen(system_id, vms) if vms else None
            if chosen is not None and _reached(chosen):
                if system_id != ident:
                    raise error.AliasAccessError(system_id)
                return identity.key(chosen)
        key = None
        namespace, dot, name = ident.partition('.')
        if dot:
            vm = self._cluster.get_vm(namespace, name)
            if vm is not None:
                key = self._by_alias(ident, vm)
        if key is None:
            vms = [vm for vm in self._cluster.find_vms('name', ident)
                   if _reached(vm)]
            if vms:
                key = self._by_alias(ident, identity.pick(vms))
        if key is None:
            raise error.NotFound('System %s not found' % ident)
        return key

    def locate(self, ident):
        """``(namespace, name)`` of the VM served as ``ident``.

        :raises error.AliasAccessError: ``ident`` is an alias (307).
        :raises error.NotFound: no such served VM.
        """
        memo = context.current().memo
        if ('locate', ident) not in memo:
            memo['locate', ident] = self._resolve(ident)
        return memo['locate', ident]
