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

"""CDI DataVolumes: HTTP import from a loopback server, WFFC, cleanup."""

import base64
import http.server
import threading

from kubernetes import client
import pytest
from tests.functional.simulator import apitools
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import objects

G, V, P = 'cdi.kubevirt.io', 'v1beta1', 'datavolumes'
IMAGE = b'\x00ISO' * 75_000          # 300,000 bytes
CREDENTIALS = base64.b64encode(b'alice:s3cret').decode()
pytestmark = pytest.mark.simulator(time_scale=100, stage_delays=vmtools.TINY)


class Handler(http.server.BaseHTTPRequestHandler):
    seen = []  # (host header, path, Authorization) of every request

    def do_GET(self):
        self.seen.append((self.headers.get('Host'), self.path,
                          self.headers.get('Authorization')))
        if self.path.startswith('/redirect?'):
            self.send_response(302)
            self.send_header('Location', self.path.split('?', 1)[1])
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        if self.path == '/secure.iso' and self.headers.get(
                'Authorization') != 'Basic ' + CREDENTIALS:
            self.send_error(401)
            return
        if self.path not in ('/image.iso', '/secure.iso', '/open.iso'):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header('Content-Length', str(len(IMAGE)))
        self.end_headers()
        self.wfile.write(IMAGE)

    def log_message(self, *args):
        pass


@pytest.fixture
def images():
    Handler.seen = []
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield 'http://127.0.0.1:%d' % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def datavolume(name, source, size='1Mi', annotations=None, **storage):
    meta = {'name': name}
    if annotations:
        meta['annotations'] = annotations
    return {'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
            'metadata': meta,
            'spec': {'source': source, 'storage': dict(
                {'resources': {'requests': {'storage': size}}}, **storage)}}


def create_dv(custom, body):
    return custom.create_namespaced_custom_object(G, V, 'default', P, body)


def get_dv(custom, name):
    try:
        return custom.get_namespaced_custom_object(G, V, 'default', P, name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def wait_phase(sim, custom, name, phase):
    return sim.wait_for(lambda: (lambda dv: dv if dv and dv.get(
        'status', {}).get('phase') == phase else None)(get_dv(custom, name)))


def conditions(dv):
    return {c['type']: c for c in dv['status']['conditions']}


def test_http_import_succeeds_with_progress(simulator, custom, kube_client,
                                            images):
    rv = custom.list_namespaced_custom_object(
        G, V, 'default', P)['metadata']['resourceVersion']
    create_dv(custom, datavolume('iso', {'http': {
        'url': images + '/image.iso'}}))
    resp = custom.list_namespaced_custom_object(
        G, V, 'default', P, watch=True, resource_version=rv,
        _preload_content=False, _request_timeout=10, timeout_seconds=10)
    events = apitools.read_events(
        resp, until=lambda event: event['object'].get(
            'status', {}).get('phase') == 'Succeeded')
    resp.close()
    phases, progress = [], []
    for event in events:
        status = event['object'].get('status', {})
        if status.get('phase') and status['phase'] not in phases:
            phases.append(status['phase'])
        if status.get('phase') == 'ImportInProgress':
            progress.append(status['progress'])
    assert phases == ['Pending', 'ImportScheduled', 'ImportInProgress',
                      'Succeeded']
    assert all(p.endswith('%') and '.' in p for p in progress)
    dv = get_dv(custom, 'iso')
    assert dv['status']['progress'] == '100.0%'
    conds = conditions(dv)
    assert conds['Ready']['status'] == 'True'
    assert conds['Bound']['status'] == 'True'
    assert conds['Bound']['message'] == 'PVC iso Bound'
    assert conds['Running']['reason'] == 'Completed'
    core = client.CoreV1Api(kube_client)
    pvc = core.read_namespaced_persistent_volume_claim('iso', 'default')
    assert pvc.status.phase == 'Bound'
    assert pvc.metadata.owner_references[0].uid == dv['metadata']['uid']


def test_unfetchable_url_fails(simulator, custom, images):
    create_dv(custom, datavolume('nf', {'http': {
        'url': images + '/missing.iso'}}))
    dv = wait_phase(simulator, custom, 'nf', 'Failed')
    running = conditions(dv)['Running']
    assert running['reason'] == 'Error'
    assert 'expected status code 200, got 404' in running['message']
    assert conditions(dv)['Ready']['status'] == 'False'


def test_secret_credentials(simulator, custom, kube_client, images):
    core = client.CoreV1Api(kube_client)
    for name, password in (('good', b's3cret'), ('bad', b'wrong')):
        core.create_namespaced_secret('default', {
            'metadata': {'name': name},
            'data': {'accessKeyId': base64.b64encode(b'alice').decode(),
                     'secretKey': base64.b64encode(password).decode()}})
        create_dv(custom, datavolume('sec-' + name, {'http': {
            'url': images + '/secure.iso', 'secretRef': name}}))
    wait_phase(simulator, custom, 'sec-good', 'Succeeded')
    dv = wait_phase(simulator, custom, 'sec-bad', 'Failed')
    assert 'got 401' in conditions(dv)['Running']['message']


def test_too_small_a_volume_fails(simulator, custom, images):
    create_dv(custom, datavolume('small', {'http': {
        'url': images + '/image.iso'}}, size='300k'))
    dv = wait_phase(simulator, custom, 'small', 'Failed')
    assert 'A larger PVC is required' in conditions(dv)['Running']['message']
    create_dv(custom, datavolume('block', {'http': {
        'url': images + '/image.iso'}}, size='300k', volumeMode='Block'))
    wait_phase(simulator, custom, 'block', 'Succeeded')


def test_blank_succeeds(simulator, custom):
    create_dv(custom, datavolume('blank', {'blank': {}}))
    wait_phase(simulator, custom, 'blank', 'Succeeded')


def test_wait_for_first_consumer(simulator, custom, kube_client, images):
    client.StorageV1Api(kube_client).create_storage_class({
        'metadata': {'name': 'local', 'annotations': {
            'storageclass.kubernetes.io/is-default-class': 'true'}},
        'provisioner': 'kubernetes.io/no-provisioner',
        'volumeBindingMode': 'WaitForFirstConsumer'})
    url = images + '/image.iso'
    create_dv(custom, datavolume('wffc', {'http': {'url': url}}))
    create_dv(custom, datavolume('now', {'http': {'url': url}}, annotations={
        'cdi.kubevirt.io/storage.bind.immediate.requested': 'true'}))
    wait_phase(simulator, custom, 'now', 'Succeeded')
    dv = wait_phase(simulator, custom, 'wffc', 'WaitForFirstConsumer')
    assert conditions(dv)['Bound']['status'] == 'False'
    core = client.CoreV1Api(kube_client)
    pvc = core.read_namespaced_persistent_volume_claim('wffc', 'default')
    assert pvc.status.phase == 'Pending'
    assert pvc.spec.storage_class_name == 'local'
    # The consumer: a VM that boots from the DataVolume.
    vm = objects.make_vm('consumer', run_strategy='Always',
                         data_volume=False)
    vm['spec']['template']['spec']['volumes'] = [
        {'name': 'root', 'dataVolume': {'name': 'wffc'}}]
    custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS,
        vm)
    wait_phase(simulator, custom, 'wffc', 'Succeeded')
    vmtools.wait_running(simulator, custom, 'consumer')


def test_deleting_a_datavolume_deletes_its_pvc(simulator, custom,
                                               kube_client):
    create_dv(custom, datavolume('gone', {'blank': {}}))
    wait_phase(simulator, custom, 'gone', 'Succeeded')
    core = client.CoreV1Api(kube_client)
    assert core.read_namespaced_persistent_volume_claim('gone', 'default')
    custom.delete_namespaced_custom_object(G, V, 'default', P, 'gone')
    simulator.wait_for(
        lambda: not core.list_namespaced_persistent_volume_claim(
            'default').items)


def test_vm_datavolume_templates_are_owned_by_the_vm(simulator, custom):
    vm = vmtools.create_vm(custom, 'owner')
    dv = wait_phase(simulator, custom, 'owner-root', 'Succeeded')
    ref = dv['metadata']['ownerReferences'][0]
    assert (ref['kind'], ref['name'], ref['uid'], ref['controller']) == (
        'VirtualMachine', 'owner', vm['metadata']['uid'], True)


@pytest.mark.parametrize('url, detail', [
    ('http://[::1/x.iso', 'Invalid IPv6 URL'),
    ('http://127.0.0.1/a\r\nHost: evil/x.iso', 'control character'),
    ('http://127.0.0.1/a b.iso', 'control character or space'),
    ('http://127.0.0.1:99999/x.iso', 'out of range'),
    ('ftp://127.0.0.1/x.iso', 'expected http(s)://host/path'),
    ('http:///x.iso', 'expected http(s)://host/path'),
])
def test_bad_url_fails_at_once(simulator, custom, url, detail):
    create_dv(custom, datavolume('bad', {'http': {'url': url}}))
    dv = wait_phase(simulator, custom, 'bad', 'Failed')
    message = conditions(dv)['Running']['message']
    assert message.startswith('Unable to connect to http data source: ')
    assert detail in message
    assert '\r' not in message and '\n' not in message


def _secret(kube_client):
    client.CoreV1Api(kube_client).create_namespaced_secret('default', {
        'metadata': {'name': 'creds'},
        'data': {'accessKeyId': base64.b64encode(b'alice').decode(),
                 'secretKey': base64.b64encode(b's3cret').decode()}})


def test_credentials_follow_a_redirect_on_the_same_host(
        simulator, custom, kube_client, images):
    _secret(kube_client)
    create_dv(custom, datavolume('same', {'http': {
        'url': images + '/redirect?/secure.iso', 'secretRef': 'creds'}}))
    wait_phase(simulator, custom, 'same', 'Succeeded')
    assert [(path, auth) for _host, path, auth in Handler.seen] == [
        ('/redirect?/secure.iso', 'Basic ' + CREDENTIALS),
        ('/secure.iso', 'Basic ' + CREDENTIALS)]


def test_credentials_never_follow_a_redirect_to_another_host(
        simulator, custom, kube_client, images):
    _secret(kube_client)
    # Same server, another host name: Go's net/http drops Authorization.
    other = images.replace('127.0.0.1', 'localhost') + '/open.iso'
    create_dv(custom, datavolume('other', {'http': {
        'url': images + '/redirect?' + other, 'secretRef': 'creds'}}))
    wait_phase(simulator, custom, 'other', 'Succeeded')
    hosts = [(host.split(':')[0], path, auth)
             for host, path, auth in Handler.seen]
    assert hosts == [('127.0.0.1', '/redirect?' + other,
                      'Basic ' + CREDENTIALS),
                     ('localhost', '/open.iso', None)]
