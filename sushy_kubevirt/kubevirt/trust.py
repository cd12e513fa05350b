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

"""Trust in an https image server: VerifyCertificate and a tray's CA.

Pure functions of VMs and ConfigMaps; no I/O. A tray's VerifyCertificate
is a VM annotation (:func:`verify_annotation`); its CA certificate (the
``Certificates`` collection, one member ``Default``) is a ConfigMap
owned by the VM (:func:`ca_configmap_body`), in the form CDI's
``certConfigMap`` takes. :func:`tls` chooses an import's
``(certConfigMap, insecureSkipVerify)``.
"""

from cryptography import x509

from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import media

#: Label of a tray's CA ConfigMap (the emulator watches those only).
LABEL_CA = 'sushy-kubevirt.io/vmedia-ca'
#: Label selector of the CA ConfigMaps.
CA_SELECTOR = '%s=%s,%s' % (media.LABEL_MANAGED_BY, media.MANAGED_BY,
                            LABEL_CA)
#: The ConfigMap key holding the PEM (CDI's importer reads every key).
CA_KEY = 'ca.pem'
#: The id of the one certificate of a tray (sushy-tools' too).
CA_ID = 'Default'


def verify_annotation(device):
    """VM annotation: ``device``'s VerifyCertificate ("true"/"false")."""
    return 'sushy-kubevirt.io/vmedia-%s-verify-certificate' % device.lower()


def verify_certificate(vm, device, default):
    """``device``'s VerifyCertificate: the VM's setting, else ``default``."""
    value = fields.annotation(vm, verify_annotation(device))
    return default if value not in ('true', 'false') else value == 'true'


def verify_ops(vm, device, verify):
    """Ops recording VerifyCertificate ``verify`` ([] when recorded)."""
    value = 'true' if verify else 'false'
    if fields.annotation(vm, verify_annotation(device)) == value:
        return []
    return fields.annotation_ops(vm, verify_annotation(device), value)


def checked_pem(text):
    """``text`` when it holds PEM certificates and nothing else.

    :raises ValueError: why not (a private key is refused: the text goes
        into a ConfigMap).
    """
    if not isinstance(text, str) or 'PRIVATE KEY' in text:
        raise ValueError('expected PEM certificates only')
    try:
        x509.load_pem_x509_certificates(text.encode('utf-8'))
    except ValueError as exc:
        raise ValueError('not a PEM certificate (%s)' % exc) from None
    return text


def ca_configmap_name(vm, device):
    """Name of the ConfigMap of ``device``'s CA certificate."""
    vm_name = vm['metadata']['name']
    return media.fit(vm_name, '-vmedia-%s-ca' % device.lower(),
                     (vm_name, device, 'ca'))


def ca_configmap_body(vm, device, pem):
    """ConfigMap of the CA certificate ``pem``, owned by the VM.

    In the form CDI's ``certConfigMap`` takes: the importer trusts the
    PEM certificates of every key, on top of the system's.
    """
    meta = media.metadata(vm, device, ca_configmap_name(vm, device), None)
    meta['labels'][LABEL_CA] = 'true'
    return {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': meta,
            'data': {CA_KEY: pem}}


def ca_certificate(configmap, vm, device):
    """The PEM of a tray's CA ConfigMap; None when not this tray's."""
    if not configmap or fields.get(configmap, 'metadata',
                                   'deletionTimestamp') or \
            not media.is_tray(configmap, vm, device):
        return None
    return (configmap.get('data') or {}).get(CA_KEY)


def tls(scheme, verify, configmap):
    """``(certConfigMap, insecureSkipVerify)`` of an import.

    Nothing for http; https without verification skips it, else
    ``configmap`` (the tray's CA, or the configured one; None: the
    system's CAs only) is trusted on top of the system's.
    """
    if scheme != 'https':
        return None, False
    if not verify:
        return None, True
    return configmap, False
