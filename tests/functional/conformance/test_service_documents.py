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

"""The service documents and the headers of every answer, over HTTP.

``/redfish``, ``$metadata`` and the OData service document need no
credentials (everything else still does); ``$metadata`` references the
schema of every namespace the service's answers name; a request for
another OData version is a 412; GET and HEAD answers carry ``Allow``,
``Cache-Control`` and a ``Link`` to their schema; a 204 has no
``Content-Type``.
"""

import xml.etree.ElementTree as ET

import pytest
import requests
from tests.functional.conformance import conftest
from tests.functional.conformance import test_links
from tests.functional.emulator import harness

from sushy_kubevirt.redfish import oem

USER, PASSWORD = 'admin', 'S3cret-password'
ROOT = '/redfish/v1/'
SESSIONS = '/redfish/v1/SessionService/Sessions'
OPEN = ('/redfish', '/redfish/v1/$metadata', '/redfish/v1/odata')
EDMX = '{http://docs.oasis-open.org/odata/ns/edmx}'
EDM = '{http://docs.oasis-open.org/odata/ns/edm}'
SCHEMAS = 'http://redfish.dmtf.org/schemas/v1/'
#: Answers no link leads to: registries' files, errors.
UNLINKED = ('/redfish/v1/Registries/BiosAttributeRegistry.v1_0_0',
            '/redfish/v1/Systems/Bios/BiosRegistry',
            '/redfish/v1/Registries/Messages/Registry',
            '/redfish/v1/Systems/no-such-system')


sim = conftest.sim_fixture(2)


@pytest.fixture(scope='module')
def emulator(sim, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('documents')
    auth_file = harness.write_htpasswd(tmp / 'htpasswd', USER, PASSWORD)
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_AUTH_FILE=str(auth_file),
        SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE='default')
    with harness.InProcess(config) as server:
        yield server


@pytest.fixture(scope='module')
def client(emulator):
    """A logged-in session (its token) on the emulator."""
    with requests.Session() as session:
        login = session.post(emulator.url + SESSIONS, json={
            'UserName': USER, 'Password': PASSWORD}, timeout=30)
        assert login.status_code == 201, login.text
        session.headers['X-Auth-Token'] = login.headers['X-Auth-Token']
        session.base = emulator.url
        yield session
        session.delete(emulator.url + login.headers['Location'], timeout=30)


def _get(client, path, **headers):
    return client.get(client.base + path, headers=headers, timeout=30)


def _metadata(url):
    response = requests.get(url + '/redfish/v1/$metadata', timeout=30)
    assert response.status_code == 200
    return response, ET.fromstring(response.content)


def _included(tree):
    """``{namespace: the CSDL file URI}`` of ``$metadata``'s references."""
    return {include.get('Namespace'): reference.get('Uri')
            for reference in tree.iter(EDMX + 'Reference')
            for include in reference.iter(EDMX + 'Include')}


def _types(value):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == '@odata.type' and isinstance(item, str):
                yield item
            else:
                yield from _types(item)
    elif isinstance(value, list):
        for item in value:
            yield from _types(item)


def test_redfish_names_the_v1_root_without_credentials(emulator):
    response = requests.get(emulator.url + '/redfish', timeout=30)
    assert response.status_code == 200
    assert response.headers['Content-Type'] == 'application/json'
    assert response.json() == {'v1': ROOT}


def test_metadata_is_csdl_with_the_service_container(emulator):
    response, tree = _metadata(emulator.url)
    assert response.headers['Content-Type'].startswith('application/xml')
    assert tree.tag == EDMX + 'Edmx' and tree.get('Version') == '4.0'
    container = tree.find('%sDataServices/%sSchema/%sEntityContainer'
                          % (EDMX, EDM, EDM))
    assert container.get('Name') == 'Service'
    extends = container.get('Extends').rpartition('.')[0]
    assert _included(tree)[extends] == SCHEMAS + 'ServiceRoot_v1.xml'


def test_metadata_references_every_namespace_answered(emulator, client):
    """Crawl from the root (logged in): each type's schema is referenced.

    And only those: every namespace referenced is one an answer names.
    """
    subscription = client.post(
        client.base + '/redfish/v1/EventService/Subscriptions', json={
            'Destination': 'http://127.0.0.1:9/', 'Protocol': 'Redfish'},
        timeout=30)
    assert subscription.status_code == 201, subscription.text
    system = client.get(client.base + '/redfish/v1/Systems',
                        timeout=30).json()['Members'][0]['@odata.id']
    update = client.post(
        client.base + '/redfish/v1/UpdateService/Actions/'
        'UpdateService.SimpleUpdate', json={
            'ImageURI': 'http://127.0.0.1:9/bios-1.0.1.bin',
            'Targets': [system]}, timeout=30)
    assert update.status_code == 202, update.text   # a Task to crawl
    harness.wait_until(lambda: client.get(
        client.base + update.headers['Location'],
        timeout=30).status_code == 200, what='task ended')
    seen, todo, types = set(), [ROOT, *UNLINKED], set()
    while todo:
        uri = todo.pop()
        if uri in seen:
            continue
        seen.add(uri)
        response = _get(client, uri)
        if response.headers.get('Content-Type') != 'application/json':
            continue
        body = response.json()
        types.update(_types(body))
        if response.status_code == 200:
            todo.extend(u for u in test_links.links(body) if u not in seen)
    client.delete(client.base + subscription.headers['Location'],
                  timeout=30)
    assert SESSIONS in seen and len(seen) > 30
    namespaces = {t.lstrip('#').rpartition('.')[0] for t in types}
    namespaces = {n for n in namespaces if not n.startswith(oem.VENDOR)}
    included = _included(_metadata(emulator.url)[1])
    listed = {n for n in included if '.' in n or n.endswith(
        'Collection') or n == 'Resource'}
    assert sorted(namespaces - listed) == []
    assert sorted(listed - namespaces) == []
    for namespace in namespaces:
        assert included[namespace] == '%s%s_v1.xml' % (
            SCHEMAS, namespace.partition('.')[0])
        assert namespace.partition('.')[0] in included


def test_odata_service_document_lists_the_root_resources(emulator, client):
    response = requests.get(emulator.url + '/redfish/v1/odata', timeout=30)
    assert response.status_code == 200
    assert response.headers['Content-Type'] == 'application/json'
    body = response.json()
    assert body['@odata.context'] == '/redfish/v1/$metadata'
    by_name = {item['name']: item for item in body['value']}
    assert {item['kind'] for item in body['value']} == {'Singleton'}
    assert by_name['Service']['url'] == ROOT
    root = _get(client, ROOT).json()
    for name in ('Systems', 'Chassis', 'Managers', 'SessionService',
                 'AccountService', 'EventService'):
        assert by_name[name]['url'] == root[name]['@odata.id']
        assert _get(client, by_name[name]['url']).status_code == 200


def test_only_the_documents_and_the_root_are_open(emulator):
    for path in OPEN + (ROOT,):
        assert requests.get(emulator.url + path,
                            timeout=30).status_code == 200, path
    for path in ('/redfish/v1/Systems', '/redfish/v1/Chassis', SESSIONS,
                 '/redfish/v1/Managers', '/redfish/v1/odata/x'):
        assert requests.get(emulator.url + path,
                            timeout=30).status_code == 401, path


def test_another_odata_version_is_a_412(client):
    assert _get(client, ROOT, **{'OData-Version': '4.0'}).status_code == 200
    for path in (ROOT, '/redfish/v1/Systems'):
        response = _get(client, path, **{'OData-Version': '4.1'})
        assert response.status_code == 412
        assert response.headers['OData-Version'] == '4.0'
        [info] = response.json()['error']['@Message.ExtendedInfo']
        assert info['MessageId'].startswith('Base.')
        assert info['MessageId'].endswith('.PreconditionFailed')


@pytest.mark.parametrize('method', ['GET', 'HEAD'])
def test_headers_of_get_and_head(client, method):
    system = _get(client, '/redfish/v1/Systems').json()['Members'][0]
    allowed = {ROOT: {'GET', 'HEAD'},
               '/redfish/v1/Systems': {'GET', 'HEAD'},
               system['@odata.id']: {'GET', 'HEAD', 'PATCH'},
               SESSIONS: {'GET', 'HEAD', 'POST'}}
    for path, methods in allowed.items():
        response = client.request(method, client.base + path, timeout=30)
        assert response.status_code == 200, path
        headers = response.headers
        assert headers['OData-Version'] == '4.0'
        assert headers['Cache-Control'] == 'no-cache'
        assert {m.strip() for m in headers['Allow'].split(',')} == methods
        odata_type = _get(client, path).json()['@odata.type']
        schema = '%s%s.json' % (SCHEMAS, odata_type.lstrip('#').rpartition(
            '.')[0])
        if method == 'HEAD' and path == system['@odata.id']:
            # sushy-tools answers a System's HEAD with no body: no type.
            schema = '/redfish/v1/$metadata'
        assert response.links['describedby']['url'] == schema, path


def test_a_204_has_no_content_type(client):
    system = _get(client, '/redfish/v1/Systems').json()['Members'][0]
    path = system['@odata.id']
    login = requests.post(client.base + SESSIONS, json={
        'UserName': USER, 'Password': PASSWORD}, timeout=30)
    assert login.status_code == 201, login.text
    answers = {
        'Bios PATCH': client.patch(
            client.base + path + '/Bios/Settings',
            json={'Attributes': {'QuietBoot': False}}, timeout=30),
        'ResetBios': client.post(
            client.base + path + '/Bios/Actions/Bios.ResetBios', json={},
            timeout=30),
        'System PATCH': client.patch(client.base + path, json={
            'Boot': {'BootSourceOverrideTarget': 'Pxe',
                     'BootSourceOverrideEnabled': 'Once'}}, timeout=30),
        'Reset': client.post(
            client.base + path + '/Actions/ComputerSystem.Reset',
            json={'ResetType': 'ForceOff'}, timeout=30),
        'Session DELETE': client.delete(
            client.base + login.headers['Location'], timeout=30),
    }
    for name, response in answers.items():
        assert response.status_code == 204, (name, response.text)
        assert 'Content-Type' not in response.headers, name
        assert response.content == b'', name


def test_other_drivers_keep_the_stock_404(tmp_path):
    config = harness.write_config(tmp_path / 'fake.conf', drivers=False)
    process = harness.emulator_process('sushy-emulator', config, tmp_path)
    process.argv.append('--fake')
    try:
        process.start().wait_ready()
        for path in OPEN:
            assert requests.get(process.url + path,
                                timeout=30).status_code == 404, path
    finally:
        process.stop()
