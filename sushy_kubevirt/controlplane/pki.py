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

"""The control plane's certificates and keys, made with ``cryptography``.

Two CAs, as kubeadm lays them out: ``ca`` signs the serving certificates
and the client certificates kube-apiserver accepts; ``front-proxy-ca``
signs only the aggregator's proxy client, whose ``X-Remote-User`` headers
extension API servers trust. ``sa`` is the service-account signing key.
"""

import datetime
import ipaddress

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID

from sushy_kubevirt import files

VALIDITY = datetime.timedelta(days=30)


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name, organization=None):
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                        organization))
    return x509.Name(attrs)


def _write(directory, stem, cert, key):
    files.replace(directory / (stem + '.crt'),
                  cert.public_bytes(serialization.Encoding.PEM))
    files.replace(directory / (stem + '.key'), key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()), 0o600)


class Authority:
    """A self-signed CA that issues leaf certificates into a directory."""

    def __init__(self, directory, stem, common_name):
        self.directory = directory
        self.key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = _name(common_name)
        self.cert = (
            x509.CertificateBuilder().subject_name(self.name)
            .issuer_name(self.name).public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(
                self.key.public_key()), critical=False)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256()))
        _write(directory, stem, self.cert, self.key)
        self.path = directory / (stem + '.crt')

    def issue(self, stem, common_name, *, organization=None, hosts=(),
              client=False):
        """Write ``stem.crt``/``stem.key``; serving if ``hosts``."""
        key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self.name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                           critical=True)
            # Key identifiers: X.509 strict verification (urllib3 2,
            # Python 3.13) refuses certificates without them.
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(
                key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    self.key.public_key()), critical=False))
        if hosts:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            builder = builder.add_extension(x509.SubjectAlternativeName([
                _san(host) for host in hosts]), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages),
                                        critical=False)
        _write(self.directory, stem, builder.sign(self.key, hashes.SHA256()),
               key)
        return (self.directory / (stem + '.crt'),
                self.directory / (stem + '.key'))


def _san(host):
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def service_account_key(directory):
    """Write ``sa.key`` (RSA, as the token signer needs) and ``sa.pub``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files.replace(directory / 'sa.key', key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()), 0o600)
    files.replace(directory / 'sa.pub', key.public_key().public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.SubjectPublicKeyInfo))
    return directory / 'sa.key', directory / 'sa.pub'
