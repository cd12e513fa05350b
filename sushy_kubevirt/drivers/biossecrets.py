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

"""The Secret of a VM's BIOS Password attributes (write-only values).

One Secret per VM (:func:`sushy_kubevirt.kubevirt.bios.secret_name`),
owned by the VM so the garbage collector deletes it with the VM. Values
are never logged nor put into an error message.
"""

from sushy_tools import error

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt.kubevirt import identity


def _not_ours(namespace, name):
    return error.Conflict(
        'Secret %s/%s exists and is not the BIOS Secret of this virtual '
        'machine; the password was not stored' % (namespace, name))


def store(cluster, vm, values):
    """Create the Secret with ``values``, or set them in it (1-2 calls).

    :raises sushy_tools.error.Conflict: a Secret of that name belongs to
        another object (or to a deleted VM of the same name, until the
        garbage collector removes it).
    """
    if not values:
        return
    namespace = identity.key(vm)[0]
    name = bios.secret_name(vm)
    try:
        cluster.create_secret(namespace, bios.secret_body(vm, values))
        return
    except apierrors.Conflict:
        pass    # it exists: set the values in it
    try:
        cluster.patch_secret(namespace, name, bios.secret_ops(vm, values))
    except apierrors.Conflict:
        raise _not_ours(namespace, name) from None
    except apierrors.Invalid as exc:
        if apierrors.patch_not_applicable(exc):
            raise _not_ours(namespace, name) from None
        raise


def clear(cluster, vm):
    """Delete the Secret (ResetBios: the default password is empty)."""
    try:
        cluster.delete_secret(identity.key(vm)[0], bios.secret_name(vm))
    except apierrors.NotFound:
        pass
