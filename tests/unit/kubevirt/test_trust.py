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

"""Unit tests for sushy_kubevirt.kubevirt.tray (the virtual-media policy)."""

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import trust
from sushy_kubevirt.simulator import certificates


@pytest.fixture(scope='module')
def pem():
    return certificates.Certificates('127.0.0.1').ca_pem.decode()


def test_verify_certificate_is_an_annotation():
    vm = fx.vm()
    assert trust.verify_certificate(vm, 'Cd', True) is True
    assert trust.verify_certificate(vm, 'Cd', False) is False
    ops = trust.verify_ops(vm, 'Cd', False)
    vm['metadata'].setdefault('annotations', {})[
        trust.verify_annotation('Cd')] = 'false'
    assert ops
    assert trust.verify_certificate(vm, 'Cd', True) is False
    assert trust.verify_ops(vm, 'Cd', False) == []


def test_ca_configmap(pem):
    vm = fx.vm()
    body = trust.ca_configmap_body(vm, 'Cd', pem)
    assert body['data'] == {trust.CA_KEY: pem}
    assert body['metadata']['ownerReferences'] == [media.owner_reference(vm)]
    assert body['metadata']['labels'][trust.LABEL_CA] == 'true'
    assert trust.ca_certificate(body, vm, 'Cd') == pem
    other = fx.vm(name='other')
    assert trust.ca_certificate(body, other, 'Cd') is None
    assert trust.ca_certificate(None, vm, 'Cd') is None


@pytest.mark.parametrize('text', [
    '', 'junk', None,
    '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'])
def test_only_pem_certificates(text):
    with pytest.raises(ValueError):
        trust.checked_pem(text)


def test_checked_pem(pem):
    assert trust.checked_pem(pem) == pem


def test_tls():
    assert trust.tls('http', False, 'ca') == (None, False)
    assert trust.tls('https', False, 'ca') == (None, True)
    assert trust.tls('https', True, 'ca') == ('ca', False)
    assert trust.tls('https', True, None) == (None, False)


def test_datavolume_source():
    vm = fx.vm()
    https = 'https://10.0.0.1/a.iso'
    http = media.datavolume_body(vm, 'Cd', https, insecure=True)
    assert http['spec']['source']['http'] == {
        'url': https, 'insecureSkipVerify': True}
    dv = media.datavolume_body(vm, 'Cd', https, cert_configmap='ca')
    assert media.tls_source(dv) == ('ca', False)
    plain = media.datavolume_body(vm, 'Cd', 'http://10.0.0.1/a.iso',
                                  insecure=True, cert_configmap='ca')
    assert media.tls_source(plain) == (None, False)
