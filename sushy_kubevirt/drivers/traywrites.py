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

"""The writes of a virtual-media tray: create, attach, delete.

An InsertMedia creates the credentials Secret (if any) and the
DataVolume, both carrying a token of the request and named for the
tray's next generation (:func:`free_generation`), then attaches the
DataVolume and records its generation in one guarded patch of the VM.
A write whose answer was lost is read back
(:mod:`sushy_kubevirt.drivers.lostanswers`): what the request made goes
on being used. What a failed request made is deleted
before it answers, each object with its uid as a precondition; what
cannot be deleted then (the API server is down) is left to the orphan
collector (:mod:`sushy_kubevirt.drivers.orphans`).
"""

import secrets

from sushy_tools import error

from sushy_kubevirt.drivers import lostanswers
from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt import errormap
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import generations
from sushy_kubevirt.kubevirt import leftovers
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import tray
from sushy_kubevirt import messages


def ignore_missing(call, *args):
    try:
        call(*args)
    except apierrors.NotFound:
        pass


#: Names of later generations tried when the next one is taken.
TRIES = 8


def free_generation(cluster, vm, device, current):
    """The next generation whose DataVolume name is free in the cache.

    After the VM's recorded generation and ``current``'s (the tray's
    DataVolume, or None). A name taken (a DataVolume of a failed insert
    the collector has not deleted yet) is skipped.
    """
    namespace = vm['metadata']['namespace']
    start = 1 + max(generations.generation(vm, device),
                    generations.of_datavolume(current) if current else 0)
    for count in range(start, start + TRIES):
        if cluster.get_datavolume(
                namespace, media.datavolume_name(vm, device, count)) is None:
            return count
    raise error.Conflict(
        'DataVolumes %s/%s to %s exist; retry the InsertMedia once they '
        'are deleted' % (namespace, media.datavolume_name(vm, device, start),
                         media.datavolume_name(vm, device, count)))


def create(cluster, logger, vm, device, request, size, settings,
           generation=0, tls=(None, False)):
    """Create the Secret (with credentials), then the DataVolume.

    ``request`` is a :class:`~sushy_kubevirt.kubevirt.tray.Insert`,
    ``settings`` the vmedia settings, ``generation`` names the
    DataVolume (:func:`media.datavolume_name`), ``tls`` is its
    ``(certConfigMap, insecureSkipVerify)``. Returns the DataVolume.
    When it is not made, the Secret made is deleted.
    """
    namespace = vm['metadata']['namespace']
    dv_name = media.datavolume_name(vm, device, generation)
    token = secrets.token_hex(8)
    made = None
    if request.username is not None:
        body = media.secret_body(vm, device, dv_name, request.username,
                                 request.password, token)
        try:
            made = _create_secret(cluster, namespace, body, token)
        except apierrors.Conflict:
            # Left by an earlier failed insert.
            ignore_missing(cluster.delete_secret, namespace,
                           body['metadata']['name'])
            made = _create_secret(cluster, namespace, body, token)
    s = settings
    body = media.datavolume_body(
        vm, device, request.url.url, size_bytes=size,
        margin=s.size_margin, default_size=s.default_size,
        storage_class=s.storage_class, volume_mode=s.volume_mode,
        secret=made and made['metadata']['name'],
        cert_configmap=tls[0], insecure=tls[1], inserted=request.inserted,
        username=None if request.url.username else request.username,
        token=token, generation_=generation)
    try:
        return lostanswers.create(cluster.create_datavolume,
                                  cluster.get_datavolume_live, namespace,
                                  body, token)
    except Exception as exc:
        if made:
            _delete_secret(cluster, logger, namespace, made)
        if isinstance(exc, apierrors.Conflict):
            raise error.Conflict(
                'DataVolume %s/%s is still being replaced; retry the '
                'InsertMedia' % (namespace, dv_name)) from exc
        raise


def _create_secret(cluster, namespace, body, token):
    return lostanswers.create(cluster.create_secret, cluster.get_secret,
                              namespace, body, token)


def _delete_secret(cluster, logger, namespace, secret):
    """Delete ``secret`` (that one only); else leave it to the collector."""
    try:
        cluster.delete_secret(namespace, secret['metadata']['name'],
                              preconditions={'uid': media.uid(secret)})
    except (apierrors.NotFound, apierrors.Conflict):
        pass
    except apierrors.ApiError as exc:
        logger.warning('Secret %s/%s is left unused (%s); the orphan '
                       'collector deletes it', namespace,
                       secret['metadata']['name'], exc)


def attach(cluster, logger, namespace, name, device, dv, inserted):
    """Attach (or detach, not ``inserted``) DataVolume ``dv`` to VM ``name``.

    The same patch records ``dv``'s generation on the VM. A patch whose
    answer was lost is checked on the VM read back. When the patch
    failed (refused, fenced, an If-Match no longer current), ``dv`` is
    deleted (only that one: its uid is a precondition) with its Secret.
    """
    dv_name = dv['metadata']['name']

    def build(vm):
        if leftovers.fenced(vm, dv):
            raise errormap.unavailable(
                'DataVolume %s/%s was left unused and is being deleted; '
                'retry the InsertMedia' % (namespace, dv_name))
        ops = (tray.attach_ops(vm, device, dv_name) if inserted
               else media.detach_ops(vm, device))
        ops += generations.record_ops(vm, device, dv)
        return ops + leftovers.release_ops(vm) if ops else ops
    try:
        preconditions.patch(cluster, namespace, name, build)
    except (apierrors.ApiError, messages.RedfishError) as exc:
        if isinstance(exc, apierrors.ApiError) and \
                lostanswers.unknown(exc) and \
                _applied(cluster, namespace, name, build):
            logger.info('VM %s/%s: the answer to attaching DataVolume %s '
                        'was lost; it is attached', namespace, name, dv_name)
            return
        try:
            delete(cluster, namespace, dv, guard=True)
        except apierrors.ApiError as failed:
            logger.warning('DataVolume %s/%s is left unused (%s); the '
                           'orphan collector deletes it', namespace,
                           dv_name, failed)
        raise


def _applied(cluster, namespace, name, build):
    """Whether the VM read back needs no more of ``build``'s patch."""
    try:
        vm = lostanswers.read_back(
            lambda: cluster.get_vm_live(namespace, name))
        return not build(vm)
    except (apierrors.ApiError, messages.RedfishError):
        return False


def delete(cluster, namespace, dv, guard=False):
    """Delete ``dv`` (only that one when ``guard``) and its Secret."""
    name = dv['metadata']['name']
    try:
        cluster.delete_datavolume(
            namespace, name, {'uid': media.uid(dv)} if guard else None)
    except apierrors.NotFound:
        pass
    except apierrors.Conflict:
        return      # made again since: neither it nor its Secret
    secret = fields.get(dv, 'spec', 'source', 'http', 'secretRef')
    if secret:
        ignore_missing(cluster.delete_secret, namespace, secret)
