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

"""Guarded writes: JSON patches that fail instead of overwriting news."""

import random
import time

from sushy_kubevirt.kube import apierrors

#: Pauses between conflicting attempts (after the second conflict): a
#: controller writing a VM's status in a burst (virt-controller during a
#: power transition) bumps its resourceVersion several times a second, and
#: immediate retries kept losing the race to it on a real API server.
PAUSE_FIRST, PAUSE_CAP = 0.02, 0.5


def _guard(vm, operations):
    version = vm['metadata']['resourceVersion']
    return [{'op': 'test', 'path': '/metadata/resourceVersion',
             'value': version}] + list(operations)


def _pause(attempt):
    if attempt:
        time.sleep(random.uniform(0.5, 1.0) *
                   min(PAUSE_CAP, PAUSE_FIRST * 2 ** attempt))


def _invalid(operations, namespace, name):
    return apierrors.Invalid('JSON patch %r does not apply to %s/%s'
                             % (operations, namespace, name), status=422,
                             reason='Invalid')


def _once(cluster, namespace, name, build_ops, base):
    """The patch of ``build_ops(base)``, applying to ``base``'s version only.

    Sent even with no operations (a ``test`` alone changes nothing but
    still fails when the VM moved on); never retried.
    """
    operations = build_ops(base)
    try:
        return cluster.patch_vm(namespace, name, _guard(base, operations))
    except apierrors.Conflict as exc:
        if operations and apierrors.patch_not_applicable(exc):
            live = cluster.get_vm_live(namespace, name)
            if live['metadata']['resourceVersion'] == \
                    base['metadata']['resourceVersion']:
                raise _invalid(operations, namespace, name) from exc
        raise


def guarded_patch(cluster, namespace, name, build_ops, retries=8,
                  base=None):
    """Patch VM ``namespace/name`` with ``build_ops(vm)``, never blindly.

    ``build_ops`` computes RFC 6902 operations from the (cached) VM; an
    empty list means nothing to do and no call is made. The patch starts
    with a ``test`` of ``/metadata/resourceVersion``, so it applies only to
    the version the operations were computed from; on :class:`Conflict`
    the VM is re-read live and the operations rebuilt, up to ``retries``
    attempts in all, with short jittered pauses from the second conflict
    on.

    With ``base`` (a VM as read, for a caller's precondition such as
    If-Match) the operations are built from ``base`` and the patch applies
    to its resourceVersion or not at all: it is sent once, even with no
    operations, and a conflict is raised, not retried.

    :returns: the patched VM, or the VM unchanged when there was nothing
        to do.
    :raises apierrors.NotFound: no such VM.
    :raises apierrors.Conflict: still conflicting after ``retries`` attempts
        (with ``base``: the VM is no longer at its version).
    """
    if base is not None:
        return _once(cluster, namespace, name, build_ops, base)
    vm = cluster.get_vm(namespace, name)
    if vm is None:
        raise apierrors.NotFound('virtualmachines.kubevirt.io "%s" not found'
                                 % name, status=404, reason='NotFound')
    for attempt in range(retries):
        operations = build_ops(vm)
        if not operations:
            return vm
        tested = vm['metadata']['resourceVersion']
        try:
            return cluster.patch_vm(namespace, name, _guard(vm, operations))
        except apierrors.Conflict as exc:
            if attempt == retries - 1:
                raise
            _pause(attempt)
            vm = cluster.get_vm_live(namespace, name)
            if apierrors.patch_not_applicable(exc) and \
                    vm['metadata']['resourceVersion'] == tested:
                # The test held, so the operations themselves are wrong.
                raise _invalid(operations, namespace, name) from exc
