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

"""The virtual-media driver's trust in https servers, kept in Kubernetes.

A tray's VerifyCertificate (the VirtualMedia PATCH, or InsertMedia's
parameter) is an annotation of the VM; its CA certificate (the
``Certificates`` collection: one, ``Default``; a second is 409, as in
sushy-tools) a ConfigMap owned by the VM, read from the watch cache
(:mod:`sushy_kubevirt.kubevirt.trust`). Both apply to the imports that
follow: https without verification is CDI's ``insecureSkipVerify``, a
CA its ``certConfigMap``.
"""

import ssl

from sushy_tools.emulator.resources import vmedia
from sushy_tools import error

from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt import errormap
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import trust
from sushy_kubevirt import messages


def _pem(text):
    """``text`` when it is PEM certificates; else 400."""
    try:
        return trust.checked_pem(text)
    except ValueError as exc:
        raise messages.RedfishError(
            'PropertyValueFormatError', '<certificate>', 'CertificateString',
            detail='CertificateString: %s' % exc) from None


class Trust:
    """The trust methods of the vmedia driver (a mixin).

    Needs ``_cluster``, ``_find_vm(identity)``, ``_get_device(identity,
    device)`` (404 for an unknown device), ``settings`` (the vmedia
    settings) and ``_verify`` (VerifyCertificate of a tray with no own).
    """

    @errormap.translate
    def update_device_info(self, identity_, device, verify=False):
        """Record VerifyCertificate on the VM (for the next imports)."""
        self._get_device(identity_, device)
        namespace, name = identity.key(self._find_vm(identity_))
        preconditions.patch(self._cluster, namespace, name,
                            lambda vm: trust.verify_ops(vm, device, verify))

    def _ca(self, vm, device):
        """``(ConfigMap, PEM)`` of the tray's CA, or ``(None, None)``."""
        found = self._cluster.get_configmap(
            vm['metadata']['namespace'], trust.ca_configmap_name(vm, device))
        pem = trust.ca_certificate(found, vm, device)
        return (found, pem) if pem is not None else (None, None)

    def _certificate(self, identity_, device, cert_id):
        """``(namespace, ConfigMap)`` of certificate ``cert_id``; 404."""
        self._get_device(identity_, device)
        vm = self._find_vm(identity_)
        found = self._ca(vm, device)[0]
        if found is None or cert_id != trust.CA_ID:
            raise error.NotFound('Certificate %s not found' % cert_id)
        return vm['metadata']['namespace'], found

    @errormap.translate
    def add_certificate(self, identity_, device, cert_string, cert_type):
        """Keep the CA in a ConfigMap owned by the VM (409 when one is)."""
        self._get_device(identity_, device)
        pem = _pem(cert_string)
        vm = self._find_vm(identity_)
        if self._ca(vm, device)[0] is not None:
            raise error.FishyError('Virtual media certificate already '
                                   'exists', code=409)
        try:
            self._cluster.create_configmap(
                vm['metadata']['namespace'],
                trust.ca_configmap_body(vm, device, pem))
        except apierrors.Conflict:
            raise error.FishyError('Virtual media certificate already '
                                   'exists', code=409) from None
        return vmedia.Certificate(trust.CA_ID, pem, cert_type)

    @errormap.translate
    def replace_certificate(self, identity_, device, cert_id, cert_string,
                            cert_type):
        """Replace the CA (a PUT guarded by its resourceVersion)."""
        pem = _pem(cert_string)
        namespace, found = self._certificate(identity_, device, cert_id)
        body = dict(found, data={trust.CA_KEY: pem})
        self._cluster.replace_configmap(namespace,
                                        found['metadata']['name'], body)
        return vmedia.Certificate(trust.CA_ID, pem, cert_type)

    @errormap.translate
    def list_certificates(self, identity_, device):
        """The tray's CA certificate, from the watch cache."""
        self._get_device(identity_, device)
        pem = self._ca(self._find_vm(identity_), device)[1]
        return [] if pem is None else [
            vmedia.Certificate(trust.CA_ID, pem, 'PEM')]

    @errormap.translate
    def delete_certificate(self, identity_, device, cert_id):
        """Delete the CA's ConfigMap; later imports do not use it."""
        namespace, found = self._certificate(identity_, device, cert_id)
        try:
            self._cluster.delete_configmap(
                namespace, found['metadata']['name'],
                preconditions={'uid': media.uid(found)})
        except apierrors.NotFound:
            pass

    def _check_context(self, vm, device, tls):
        """The image check's TLS context: it trusts as the import will."""
        if not tls[1] and not tls[0]:
            return None
        context = ssl.create_default_context()
        if tls[1]:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            return context
        pem = self._ca(vm, device)[1]
        if pem:
            context.load_verify_locations(cadata=pem)
        return context

    def _tls(self, vm, device, url, verify):
        """``(certConfigMap, insecureSkipVerify)`` of an import of ``url``.

        The tray's CA when it has one, else the configured ConfigMap.
        """
        found = self._ca(vm, device)[0]
        return trust.tls(url.scheme, verify,
                         found['metadata']['name'] if found is not None
                         else self.settings.cert_configmap)
