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

"""CDI DataVolumes: HTTP import from a loopback server, WFFC, cleanup.

A failing importer is restarted (``restartCount``), never ``Failed``, as
CDI v1.66's; a PVC in use by a running VMI outlives its DataVolume
(pvc-protection) and one made again under its name waits for it.
"""

import base64
import http.server
import threading

from kubernetes import client
import pytest
from tests.functional.simulator import apitools
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import pvcprotection

G, V, P = 'cdi.kubevirt.io', 'v1beta1', 'datavolumes'
IMAGE = b'\x00ISO' * 75_000          # 300,000 bytes
CREDENTIALS = base64.b64encode(b'alice:s3cret').decode()
pytestmark = pytest.mark.simulator(time_scale=100, stage_delays=vmtools.TINY)


class Handler(http.server.BaseHTTPRequestHandler):
    seen = []  # (host header, path, Authorization) of every request
    late = set()  # paths that exist from now on

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
        if self.path not in ('/image.iso', '/secure.iso', '/open.iso') \
                and self.path not in self.late:
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
    Handler.late = set()
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


def restarted(sim, custom, name, count=1):
    """The DataVolume once its importer restarted ``count`` times.

    As CDI's: ``Running`` False, reason Error, the phase kept.
    """
    def failing():
        dv = get_dv(custom, name)
        status = (dv or {}).get('status') or {}
        running = {c['type']: c for c in status.get('conditions') or ()}.get(
            'Running') or {}
        if status.get('restartCount', 0) >= count and \
                running.get('reason') == 'Error':
            return dv
        return None
    dv = sim.wait_for(failing)
    assert dv['status']['phase'] in ('ImportScheduled', 'ImportInProgress')
    assert conditions(dv)['Running']['status'] == 'False'
    assert conditions(dv)['Ready']['status'] == 'False'
    return dv


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


def test_unfetchable_url_restarts_the_importer(simulator, custom, images):
    create_dv(custom, datavolume('nf', {'http': {
        'url': images + '/late.iso'}}))
    dv = restarted(simulator, custom, 'nf', count=3)
    running = conditions(dv)['Running']
    assert 'expected status code 200, got 404' in running['message']
    tries = [path for _host, path, _auth in Handler.seen]
    assert tries.count('/late.iso') >= 3
    # The image appears: a later restart imports it.
    Handler.late.add('/late.iso')
    dv = wait_phase(simulator, custom, 'nf', 'Succeeded')
    assert dv['status']['restartCount'] >= 3
    assert conditions(dv)['Running']['reason'] == 'Completed'


def test_restarts_back_off_as_kubelet_does():
    assert [cdi.restart_delay(n, 10) for n in range(8)] == [
        0, 10, 20, 40, 80, 160, 300, 300]


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
    dv = restarted(simulator, custom, 'sec-bad')
    assert 'got 401' in conditions(dv)['Running']['message']


def test_too_small_a_volume_fails_the_importer(simulator, custom, images):
    create_dv(custom, datavolume('small', {'http': {
        'url': images + '/image.iso'}}, size='300k'))
    dv = restarted(simulator, custom, 'small')
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
def test_bad_url_fails_the_importer(simulator, custom, url, detail):
    create_dv(custom, datavolume('bad', {'http': {'url': url}}))
    dv = restarted(simulator, custom, 'bad')
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


def _pvc(core, name):
    try:
        return core.read_namespaced_persistent_volume_claim(name, 'default')
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def test_a_datavolume_made_again_waits_for_its_pvc_in_use(
        simulator, custom, kube_client, images):
    core = client.CoreV1Api(kube_client)
    create_dv(custom, datavolume('cd', {'http': {
        'url': images + '/image.iso'}}))
    wait_phase(simulator, custom, 'cd', 'Succeeded')
    vm = objects.make_vm('user', run_strategy='Always', data_volume=False)
    vm['spec']['template']['spec']['volumes'] = [
        {'name': 'root', 'dataVolume': {'name': 'cd'}}]
    custom.create_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS, vm)
    vmtools.wait_running(simulator, custom, 'user')
    old = _pvc(core, 'cd')
    assert pvcprotection.FINALIZER in old.metadata.finalizers

    # Deleted while the VMI's pod mounts it: the PVC stays, marked.
    custom.delete_namespaced_custom_object(G, V, 'default', P, 'cd')
    simulator.wait_for(lambda: get_dv(custom, 'cd') is None and (
        _pvc(core, 'cd').metadata.deletion_timestamp is not None))
    create_dv(custom, datavolume('cd', {'http': {
        'url': images + '/open.iso'}}))
    # A DataVolume made after it imports; it waits for the old PVC.
    create_dv(custom, datavolume('after', {'http': {
        'url': images + '/open.iso'}}))
    wait_phase(simulator, custom, 'after', 'Succeeded')
    waiting = get_dv(custom, 'cd')
    assert (waiting.get('status') or {}).get('phase') in (None, '')
    # Its conditions are the old PVC's, as CDI reads them.
    conditions = {c['type']: (c['status'], c['reason'])
                  for c in waiting['status']['conditions']}
    assert conditions == {'Bound': ('True', 'Bound'), 'Ready': ('False', ''),
                          'Running': ('False', 'Completed')}
    assert _pvc(core, 'cd').metadata.uid == old.metadata.uid
    # Only 'after' fetched its image.
    assert [p for _h, p, _a in Handler.seen].count('/open.iso') == 1

    # The VM stops: the pod lets go, the PVC goes, the import runs.
    custom.patch_namespaced_custom_object(
        vmtools.G, vmtools.V, 'default', vmtools.VMS, 'user',
        {'spec': {'runStrategy': 'Halted'}})
    dv = wait_phase(simulator, custom, 'cd', 'Succeeded')
    pvc = _pvc(core, 'cd')
    assert pvc.metadata.uid != old.metadata.uid
    assert pvc.metadata.owner_references[0].uid == dv['metadata']['uid']
    assert pvc.metadata.deletion_timestamp is None


def test_an_unused_pvc_is_deleted_with_its_datavolume(
        simulator, custom, kube_client):
    core = client.CoreV1Api(kube_client)
    create_dv(custom, datavolume('free', {'blank': {}}))
    wait_phase(simulator, custom, 'free', 'Succeeded')
    simulator.wait_for(lambda: pvcprotection.FINALIZER in (
        _pvc(core, 'free').metadata.finalizers or ()))
    custom.delete_namespaced_custom_object(G, V, 'default', P, 'free')
    simulator.wait_for(lambda: _pvc(core, 'free') is None)
