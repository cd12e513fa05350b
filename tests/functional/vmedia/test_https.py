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

"""Virtual media from an https server whose CA is private.

The image server's certificate is issued by a CA of the test's own, so
CDI's importer (the simulator's, or the simulated importer pod under the
real CDI) cannot verify it with the system's CAs: the import fails until
the client turns VerifyCertificate off or posts the CA to the tray's
Certificates.
"""

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import trust
from sushy_kubevirt.simulator import certificates
from sushy_kubevirt.simulator.virt import model


@pytest.fixture(scope='module')
def emulator_settings():
    """The image check may take its time: its size is asserted."""
    return {'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_WAIT': 2}


def _requested(machine):
    return machine.dv()['spec']['storage']['resources']['requests'][
        'storage']


@pytest.fixture(scope='module')
def authority():
    return certificates.Certificates('127.0.0.1')


@pytest.fixture(scope='module')
def secure_images(tmp_path_factory, authority):
    server = conftest.ImageServer(tmp_path_factory.mktemp('https'),
                                  authority.server_context)
    try:
        yield server
    finally:
        server.stop()


def _source(machine):
    return machine.dv()['spec']['source']['http']


def _certificates(machine):
    return machine.cd + '/Certificates'


def _configmap(sim, name):
    return sim.store.try_get(sim.store.resource('', 'configmaps'),
                             'default', name)


def _failing(machine, timeout=40.0):
    """The VirtualMedia once the import shows a certificate failure."""
    def failed():
        state = machine.media()
        error = state['Oem']['SushyKubevirt']['ImportError'] or ''
        return state if 'certificate' in error.lower() else None
    return harness.wait_until(failed, timeout, 0.05,
                              'the import failing to verify')


def _post_ca(machine, pem):
    return requests.post(machine.url(_certificates(machine)), json={
        'CertificateString': pem, 'CertificateType': 'PEM'}, timeout=30)


def test_verifying_without_the_ca_fails(machine, secure_images):
    image = secure_images.add('plain-%s.iso' % machine.name)
    assert machine.media()['VerifyCertificate'] is True
    answer = machine.insert(image, TransferProtocolType='HTTPS')
    assert answer.status_code == 204, answer.text
    state = _failing(machine)
    assert _requested(machine) == '10Gi'   # the check could not verify
    assert state['Image'] == image
    assert state['Inserted'] is False
    assert state['Status']['Health'] in ('Warning', 'Critical')
    assert state['Status']['Conditions']
    assert 'certConfigMap' not in _source(machine)
    assert 'insecureSkipVerify' not in _source(machine)


def test_verify_certificate_false_imports(machine, secure_images, sim):
    image = secure_images.add('insecure-%s.iso' % machine.name)
    answer = requests.patch(machine.url(machine.cd),
                            json={'VerifyCertificate': False}, timeout=30)
    assert answer.status_code == 204, answer.text
    assert machine.media()['VerifyCertificate'] is False
    # Kept on the VM: every worker and replica reads it.
    assert machine.vm()['metadata']['annotations'][
        trust.verify_annotation('Cd')] == 'false'
    assert machine.insert(image).status_code == 204
    machine.wait_media(Inserted=True, timeout=40)
    assert _source(machine)['insecureSkipVerify'] is True
    # The image check trusted as the import did: the size was known.
    assert _requested(machine) == '1Mi'

    # Back on: the next import verifies again (and fails).
    answer = requests.patch(machine.url(machine.cd),
                            json={'VerifyCertificate': True}, timeout=30)
    assert answer.status_code == 204, answer.text
    assert machine.insert(image).status_code == 204
    _failing(machine)
    assert 'insecureSkipVerify' not in _source(machine)


def test_insert_media_sets_verify_certificate(machine, secure_images):
    image = secure_images.add('param-%s.iso' % machine.name)
    answer = machine.insert(image, VerifyCertificate=False,
                            TransferProtocolType='HTTPS',
                            UserName='user', Password='secret')
    assert answer.status_code == 204, answer.text
    state = machine.wait_media(Inserted=True, timeout=40)
    assert state['VerifyCertificate'] is False
    assert state['Password'] != 'secret'
    assert 'secret' not in answer.text


def test_ca_in_certificates(machine, secure_images, authority, sim):
    image = secure_images.add('ca-%s.iso' % machine.name)
    pem = authority.ca_pem.decode()
    collection = machine.url(_certificates(machine))
    assert requests.get(collection, timeout=30).json()['Members'] == []

    answer = _post_ca(machine, pem)
    assert answer.status_code == 204, answer.text
    location = answer.headers['Location']
    assert location.endswith('/Certificates/Default')
    again = _post_ca(machine, pem)
    assert again.status_code == 409, again.text
    members = requests.get(collection, timeout=30).json()['Members']
    assert [m['@odata.id'] for m in members] == [location]
    shown = requests.get(machine.url(location), timeout=30).json()
    assert shown['CertificateString'] == pem
    locations = requests.get(machine.url(
        '/redfish/v1/CertificateService/CertificateLocations'), timeout=30)
    assert locations.status_code == 200, locations.text

    # A ConfigMap owned by the VM, so deleting the VM deletes it.
    name = trust.ca_configmap_name(machine.vm(), 'Cd')
    configmap = _configmap(sim, name)
    assert configmap['data'] == {trust.CA_KEY: pem}
    assert [r['uid'] for r in configmap['metadata']['ownerReferences']] \
        == [machine.vm()['metadata']['uid']]

    assert machine.insert(image).status_code == 204
    machine.wait_media(Inserted=True, timeout=40)
    assert _source(machine)['certConfigMap'] == name
    assert _requested(machine) == '1Mi'

    # Deleted: the next import no longer trusts it.
    answer = requests.delete(machine.url(location), timeout=30)
    assert answer.status_code == 204, answer.text
    assert requests.get(collection, timeout=30).json()['Members'] == []
    harness.wait_until(lambda: _configmap(sim, name) is None, 10, 0.05,
                       'the ConfigMap deleted')
    assert requests.delete(machine.url(location),
                           timeout=30).status_code == 404
    assert machine.insert(image).status_code == 204
    _failing(machine)
    assert 'certConfigMap' not in _source(machine)


def _calls(sim):
    backend.log_complete(sim)
    return sorted('%s %s' % (e['verb'], e['resource'])
                  for e in harness.api_calls(sim)
                  if e.get('resource') in ('configmaps', 'virtualmachines',
                                           'datavolumes', 'secrets'))


def test_api_calls(machine, secure_images, authority, sim):
    """Reads from the watch cache; each change one write."""
    pem = authority.ca_pem.decode()
    collection = machine.url(_certificates(machine))
    assert _post_ca(machine, pem).status_code == 204
    harness.wait_until(lambda: requests.get(collection, timeout=30).json()[
        'Members'], 10, 0.05, 'the certificate in the watch cache')

    sim.request_log.clear()
    assert requests.get(collection, timeout=30).status_code == 200
    assert requests.get(collection + '/Default',
                        timeout=30).status_code == 200
    assert machine.media()['VerifyCertificate'] is True
    assert _calls(sim) == []

    sim.request_log.clear()
    answer = machine.insert(secure_images.add('calls-%s.iso' % machine.name),
                            VerifyCertificate=False)
    assert answer.status_code == 204, answer.text
    calls = _calls(sim)
    print('API calls per InsertMedia with VerifyCertificate false: %s'
          % calls)
    assert calls.count('create datavolumes') == 1
    # The VerifyCertificate recorded, then the CD-ROM attached.
    assert 2 <= calls.count('patch virtualmachines') <= 4

    sim.request_log.clear()
    assert requests.delete(collection + '/Default',
                           timeout=30).status_code == 204
    assert _calls(sim) == ['delete configmaps']


@pytest.mark.parametrize('body', [
    {'TransferProtocolType': 'HTTP'},
    {'TransferProtocolType': 'FTP'},
    {'VerifyCertificate': 'no'},
])
def test_bad_parameters_change_nothing(machine, secure_images, body):
    before = machine.vm()['metadata']['resourceVersion']
    answer = machine.insert(secure_images.url('bad.iso'), **body)
    assert answer.status_code == 400, answer.text
    assert machine.vm()['metadata']['resourceVersion'] == before
    assert machine.datavolumes() == []


@pytest.mark.parametrize('text', [
    'not a certificate',
    '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
])
def test_bad_certificate_refused(machine, sim, text):
    answer = _post_ca(machine, text)
    assert answer.status_code == 400, answer.text
    assert 'PropertyValueFormatError' in answer.text
    assert _configmap(sim, trust.ca_configmap_name(
        machine.vm(), 'Cd')) is None


@pytest.mark.parametrize('body, message_id', [
    ('["x"]', 'MalformedJSON'),
    ('{"CertificateType": "PEM"}', 'PropertyMissing'),
    ('{"CertificateString": 7, "CertificateType": "PEM"}',
     'PropertyValueTypeError'),
    ('{"CertificateString": "x", "CertificateType": "DER"}',
     'PropertyValueNotInList'),
    ('{"CertificateString": "x", "CertificateType": "PEM", "Id": "a"}',
     'PropertyUnknown'),
])
def test_certificate_body_is_checked(machine, sim, body, message_id):
    answer = requests.post(machine.url(_certificates(machine)), data=body,
                           headers={'Content-Type': 'application/json'},
                           timeout=30)
    assert answer.status_code == 400, answer.text
    assert message_id in answer.text
    assert _configmap(sim, trust.ca_configmap_name(
        machine.vm(), 'Cd')) is None


def test_the_ca_goes_with_its_vm(machine, authority, sim):
    assert _post_ca(machine, authority.ca_pem.decode()).status_code == 204
    name = trust.ca_configmap_name(machine.vm(), 'Cd')
    assert _configmap(sim, name) is not None
    sim.store.delete(model.VM_RT, 'default', machine.name)
    harness.wait_until(lambda: _configmap(sim, name) is None, 30, 0.1,
                       'the garbage collector deleting the ConfigMap')
