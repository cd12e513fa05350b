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

"""If-Match as a precondition of the Kubernetes write itself.

A System's ETag is a digest of its VM's, VMI's and DataVolumes' uids and
resourceVersions (:mod:`sushy_kubevirt.kubevirt.versions`). When a
write's If-Match names the current ETag, :func:`hold` keeps the VM it
was computed from in the request (:attr:`.context.Request.held`), and
the request's first write to the VM applies to that VM's
resourceVersion or not at all:

* a JSON patch (:func:`patch`) carries the ``test`` of that version, is
  built from that VM and is not retried; with nothing to change the
  ``test`` is sent alone;
* a write that cannot carry a precondition (a KubeVirt subresource call,
  a DataVolume) is preceded by :func:`claim`: such a patch recording the
  consumed ETag in annotation :data:`CLAIM_ANNOTATION`.

Either way a conflict is a 412 PreconditionFailed and nothing changed.
A request that reads the VM live before its first write (a reset plan
confirmed against the API server) calls :func:`verify` on what it read:
an If-Match that another write has consumed is a 412 there, before any
refusal that the newer state would give (a 409 for a reset in progress).
Of two requests holding one ETag exactly one gets past its first write;
the later writes of that request are guarded patches as usual. Every
Redfish write changes the VM, so the VM's version is the one that makes
writers exclusive; the VMI's and DataVolumes' versions (written by
KubeVirt and CDI, never by this driver) are compared when the ETag is
checked, just before the write.
"""

import collections

from sushy_kubevirt.drivers import context
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import disks
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import versions
from sushy_kubevirt import messages

CLAIM_ANNOTATION = 'sushy-kubevirt.io/if-match'
#: Guarded patch attempts: every round of a write race lets one writer
#: through, so this many concurrent writers on one VM all succeed.
PATCH_ATTEMPTS = 10

Held = collections.namedtuple('Held', ['key', 'vm', 'etag'])


def hold(request, vm, etag):
    """Make ``request``'s first write to ``vm`` apply to it as read."""
    request.held = Held(identity.key(vm), vm, etag)


def _take(request, namespace, name):
    request = request or context.current()
    held, request.held = request.held, None
    return held if held is not None and held.key == (namespace, name) \
        else None


def failed(etag):
    """412 PreconditionFailed for an ETag that is no longer current."""
    return messages.RedfishError(
        'PreconditionFailed', code=412, detail='If-Match %s no longer names '
        'the current ETag of this System (another write came first); '
        'nothing was changed' % etag)


def verify(vm, request=None):
    """412 now when ``vm`` (read live) is not the held VM's version.

    The held If-Match is kept for the request's first write. ``request``
    defaults to the current one, here and below.

    :raises messages.RedfishError: 412 when the held VM changed.
    """
    held = (request or context.current()).held
    if held is not None and held.key == identity.key(vm) and \
            fields.get(held.vm, 'metadata', 'resourceVersion') != \
            fields.get(vm, 'metadata', 'resourceVersion'):
        raise failed(held.etag)


def patch(cluster, namespace, name, build_ops, retries=8, request=None):
    """:func:`guarded.guarded_patch`; the request's first one as held.

    :raises messages.RedfishError: 412 when the held VM changed.
    """
    held = _take(request, namespace, name)
    if held is None:
        return guarded.guarded_patch(cluster, namespace, name, build_ops,
                                     retries=retries)
    try:
        return guarded.guarded_patch(cluster, namespace, name, build_ops,
                                     base=held.vm)
    except apierrors.Conflict:
        raise failed(held.etag) from None


def claim(cluster, namespace, name, change=True, request=None):
    """Consume a held If-Match before a write that cannot test it.

    With ``change`` the consumed ETag is recorded on the VM (its version
    moves on, so a second holder of that ETag fails here); without (the
    request turns out to change nothing) the version is only tested.
    No API call when nothing is held.

    :raises messages.RedfishError: 412 when the held VM changed.
    """
    held = _take(request, namespace, name)
    if held is None:
        return
    ops = fields.annotation_ops(held.vm, CLAIM_ANNOTATION, held.etag) \
        if change else []
    try:
        guarded.guarded_patch(cluster, namespace, name, lambda vm: ops,
                              base=held.vm)
    except apierrors.Conflict:
        raise failed(held.etag) from None


def live_etag(cluster, vm):
    """(live VM, its ETag) from live reads (2 GETs + 1 per volume).

    The volumes read are the DataVolumes (when watched) and the PVCs of
    ``persistentVolumeClaim`` volumes (when watched).
    """
    namespace, name = identity.key(vm)
    vm = cluster.get_vm_live(namespace, name)
    vmi = cluster.get_vmi_live(namespace, name)
    found = []
    if cluster.datavolumes:
        for volume in fields.volumes(vm):
            if 'dataVolume' in volume:
                found.append(cluster.get_datavolume_live(
                    namespace, fields.get(volume, 'dataVolume', 'name')))
    found += _live_claims(cluster, namespace, vm)
    return vm, versions.etag(vm, vmi, [obj for obj in found if obj])


def _live_claims(cluster, namespace, vm):
    """The PVCs of ``vm`` read live; [] when refused (as the cache's)."""
    if not cluster.claims:
        return []
    try:
        return [cluster.get_claim_live(namespace, claim)
                for claim in disks.claim_names(vm)]
    except (apierrors.Forbidden, apierrors.Unreadable):
        return []
