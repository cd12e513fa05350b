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

"""The simulator's controllers (``External``) on a real control plane.

``RemoteStore`` first, against the in-process simulator's HTTP API (no
control plane needed). Then one kube-apiserver + etcd +
kube-controller-manager for the module (``controlplane.server``), the
KubeVirt and CDI controllers running against it, and the official client
calling kube-apiserver: VMs run and stop, the aggregated
``subresources.kubevirt.io`` API is proxied to the simulator's handlers,
the admission webhooks default and refuse, CDI imports,
kube-controller-manager collects garbage, the controllers survive a
kube-apiserver restart. Those skip when the binaries cannot be built here
(no Go); with CI=true that is a failure.
"""

import http.server
import json
import logging
import os
import ssl
import threading
import urllib.error
import urllib.request
import uuid

from kubernetes import client
from kubernetes import config
import pytest
from tests.functional.simulator import apitools
from tests.functional.simulator import vmtools

from sushy_kubevirt.controlplane import build
from sushy_kubevirt.controlplane import server
from sushy_kubevirt.simulator import admission
from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import external
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import remote

KV, CDI = ('kubevirt.io', 'v1'), ('cdi.kubevirt.io', 'v1beta1')
VMS, VMIS, DVS = 'virtualmachines', 'virtualmachineinstances', 'datavolumes'
DELAYS = dict(vmtools.TINY, Shutdown=1.0)
IMAGE = b'\x00ISO' * 50_000
TIMEOUT = 30.0
pytestmark = pytest.mark.timeout(600)


def until(predicate, timeout=TIMEOUT, interval=0.1):
    """Poll ``predicate()`` until it returns a true value; return it."""
    return clock.wait_for(predicate, timeout, interval)


def heard(events, wanted):
    return [e for e in events if e[0] == wanted[0] and e[1] == wanted[1]]


@pytest.fixture
def remote_store(simulator, kubeconfig):
    store = remote.RemoteStore(kubeconfig)
    store.register(apitools.WIDGETS)
    store.wait_synced(10)
    try:
        yield store
    finally:
        store.stop()
    assert not [t for t in threading.enumerate()
                if t.name.startswith('remote-watch-')]


@pytest.mark.simulator(install=False)
def test_remote_store_reads_its_writes_and_hears_them(simulator,
                                                      remote_store):
    widgets = apitools.WIDGETS
    simulator.store.create(widgets, apitools.widget('old'))
    until(lambda: remote_store.try_get(widgets, 'default', 'old'))
    events = []
    remote_store.subscribe(lambda event, rt, obj, old: events.append(
        (event, obj['metadata']['name'], old)))
    assert heard(events, ('ADDED', 'old'))
    created = remote_store.create(widgets, dict(
        apitools.widget('new'), status={'phase': 'Ready'}))
    assert created['status'] == {'phase': 'Ready'}
    assert remote_store.get(widgets, 'default', 'new')['status'] == \
        {'phase': 'Ready'}
    changed = remote_store.mutate(
        widgets, 'default', 'new',
        lambda obj: obj['spec'].__setitem__('size', 2))
    assert remote_store.get_ref(widgets, 'default', 'new') == changed
    remote_store.delete(widgets, 'default', 'new')
    assert remote_store.try_get(widgets, 'default', 'new') is None
    until(lambda: heard(events, ('DELETED', 'new')))
    assert [e[0] for e in events if e[1] == 'new'] == [
        'ADDED', 'MODIFIED', 'MODIFIED', 'DELETED']
    assert [o['metadata']['name'] for o in
            remote_store.list(widgets, 'default')[0]] == ['old']


@pytest.mark.simulator(install=False)
def test_remote_store_errors_are_the_stores(simulator, remote_store):
    widgets = apitools.WIDGETS
    remote_store.create(widgets, apitools.widget('w'))
    with pytest.raises(apistatus.ApiError) as remote_exc:
        remote_store.mutate(widgets, 'default', 'w', lambda obj: obj[
            'metadata'].__setitem__('resourceVersion', '1'))
    with pytest.raises(apistatus.ApiError) as local_exc:
        simulator.store.mutate(widgets, 'default', 'w', lambda obj: obj[
            'metadata'].__setitem__('resourceVersion', '1'))
    assert remote_exc.value.to_status() == local_exc.value.to_status()
    for store in (remote_store, simulator.store):
        with pytest.raises(apistatus.ApiError) as exc:
            store.mutate(widgets, 'default', 'absent', lambda obj: None)
        assert (exc.value.code, exc.value.message) == (
            404, 'widgets.sim.example.com "absent" not found')


@pytest.mark.simulator(install=False)
def test_remote_store_retries_conflicts(simulator, remote_store):
    widgets = apitools.WIDGETS
    remote_store.create(widgets, apitools.widget('w', spec={'n': 0}))

    def bump():
        for _ in range(5):
            remote_store.mutate(widgets, 'default', 'w', lambda obj: obj[
                'spec'].__setitem__('n', obj['spec']['n'] + 1))
    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert simulator.store.get(widgets, 'default', 'w')['spec']['n'] == 20


@pytest.mark.simulator(install=False)
def test_remote_store_relists_after_gone(simulator, remote_store, caplog):
    caplog.set_level(logging.INFO, logger=remote.LOG.name)
    widgets = apitools.WIDGETS
    events = []
    remote_store.subscribe(lambda event, rt, obj, old: events.append(
        (event, obj['metadata']['name'])))
    simulator.store.create(widgets, apitools.widget('before'))
    until(lambda: ('ADDED', 'before') in events)
    simulator.restart_api(down_seconds=1.0)   # the watch is cut
    simulator.store.delete(widgets, 'default', 'before')
    simulator.store.create(widgets, apitools.widget('after'))
    simulator.store.compact()   # the watch's resourceVersion is gone
    until(lambda: ('ADDED', 'after') in events)
    until(lambda: ('DELETED', 'before') in events)
    assert 'expired: relisting' in caplog.text


def _unavailable(reason):
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope='module')
def control_plane(tmp_path_factory):
    schemas = apitools.crd_schema_dir()
    try:
        binaries = build.ensure()
    except build.BuildError as exc:
        _unavailable('no control-plane binaries: %s' % exc)
    plane = server.ControlPlane(tmp_path_factory.mktemp('control-plane'),
                                crd_schemas=schemas, binaries=binaries)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope='module')
def admin_kubeconfig(control_plane):
    return control_plane.write_kubeconfig(control_plane.workdir /
                                          'admin.kubeconfig')


@pytest.fixture(scope='module')
def cluster(control_plane, admin_kubeconfig):
    cert, key = control_plane.authority.issue(
        'webhooks', 'sushy-kubevirt-webhooks', hosts=external.SERVING_HOSTS)
    controllers = external.External(
        admin_kubeconfig, webhook_cert=cert, webhook_key=key,
        client_ca=control_plane.pki / 'front-proxy-ca.crt',
        ca_bundle=control_plane.ca_file, time_scale=100, stage_delays=DELAYS,
        vms=2, namespaces=1, writer=server.ADMIN_USER)
    controllers.start()
    try:
        yield controllers
    finally:
        controllers.stop()
    left = [t.name for t in threading.enumerate() if t.name.startswith(
        ('remote-watch-', 'sim-kubevirt', 'sim-cdi', 'sim-webhooks'))]
    assert not left, 'threads left running: %s' % left


@pytest.fixture(scope='module')
def custom(cluster, admin_kubeconfig):
    api_client = config.new_client_from_config(
        config_file=admin_kubeconfig)
    try:
        yield client.CustomObjectsApi(api_client)
    finally:
        api_client.close()


@pytest.fixture
def images():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header('Content-Length', str(len(IMAGE)))
            self.end_headers()
            self.wfile.write(IMAGE)

        def log_message(self, *args):
            pass
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield 'http://127.0.0.1:%d' % httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def get(custom, plural, name, api=KV):
    try:
        return custom.get_namespaced_custom_object(*api, 'default', plural,
                                                   name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def status_is(custom, name, printable):
    vm = get(custom, VMS, name)
    return vm if vm and vm.get('status', {}).get(
        'printableStatus') == printable else None


def running_vmi(custom, name, not_uid=None):
    vmi = get(custom, VMIS, name)
    return vmi if vmi and vmi.get('status', {}).get('phase') == 'Running' \
        and vmi['metadata']['uid'] != not_uid else None


def start_vm(custom, name):
    custom.create_namespaced_custom_object(*KV, 'default', VMS,
                                           objects.make_vm(
                                               name, run_strategy='Always'))
    vm = until(lambda: status_is(custom, name, 'Running'))
    return vm, until(lambda: running_vmi(custom, name))


def test_seeded_vms_are_stopped(custom):
    for name in ('vm-00000', 'vm-00001'):
        vm = until(lambda: status_is(custom, name, 'Stopped'))
        assert get(custom, DVS, name + '-root', CDI)['status'][
            'phase'] == 'Succeeded'
        assert vm['status']['created'] is False


def test_always_vm_runs(custom):
    vm, vmi = start_vm(custom, 'runs')
    assert vm['status']['ready'] is True
    assert vm['status']['created'] is True
    assert vmi['metadata']['ownerReferences'][0]['uid'] == \
        vm['metadata']['uid']
    dv = get(custom, DVS, 'runs-root', CDI)
    assert dv['status']['phase'] == 'Succeeded'


def test_stop_through_the_aggregator(custom):
    start_vm(custom, 'stops')
    response = vmtools.action(custom, 'stops', 'stop')
    assert response.status_code == 202
    until(lambda: get(custom, VMIS, 'stops') is None)
    vm = until(lambda: status_is(custom, 'stops', 'Stopped'))
    assert vm['spec']['runStrategy'] == 'Halted'
    assert vm['status']['ready'] is False


def test_restart_replaces_the_vmi(custom):
    _vm, vmi = start_vm(custom, 'restarts')
    response = vmtools.action(custom, 'restarts', 'restart')
    assert response.status_code == 202
    until(lambda: running_vmi(custom, 'restarts',
                              not_uid=vmi['metadata']['uid']))
    until(lambda: status_is(custom, 'restarts', 'Running'))


def test_subresource_errors_are_the_simulators(custom):
    start_vm(custom, 'busy')
    body = vmtools.refused(custom, 'busy', 'start')
    assert body['message'] == (
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io '
        '"busy": VM is already running')
    assert body['reason'] == 'Conflict'
    body = vmtools.refused(custom, 'absent', 'stop', code=404)
    assert body['message'] == \
        'virtualmachine.kubevirt.io "absent" not found'


def test_discovery_through_the_aggregator(custom):
    doc = vmtools.call(custom.api_client, 'GET',
                       '/apis/subresources.kubevirt.io/v1').data
    names = {r['name'] for r in json.loads(doc)['resources']}
    assert names == {'virtualmachines/start', 'virtualmachines/stop',
                     'virtualmachines/restart',
                     'virtualmachineinstances/pause',
                     'virtualmachineinstances/unpause',
                     'virtualmachineinstances/softreboot'}


def test_aggregated_api_wants_the_front_proxy(cluster, control_plane):
    context = ssl.create_default_context(cafile=str(control_plane.ca_file))
    url = cluster.webhook_url + '/apis/subresources.kubevirt.io/v1'
    request = urllib.request.Request(url, headers={'X-Remote-User': 'eve'})
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert exc.value.code == 401
    context.load_cert_chain(control_plane.pki / 'front-proxy-client.crt',
                            control_plane.pki / 'front-proxy-client.key')
    with urllib.request.urlopen(request, context=context,
                                timeout=10) as resp:
        assert resp.status == 200


def test_mutating_webhook_defaults_the_firmware(custom):
    vm = objects.make_vm('defaulted')
    del vm['spec']['template']['spec']['domain']['firmware']['uuid']
    created = custom.create_namespaced_custom_object(*KV, 'default', VMS,
                                                     vm)
    firmware = created['spec']['template']['spec']['domain']['firmware']
    assert uuid.UUID(firmware['uuid']).version == 4
    assert firmware['serial'] == 'defaulted'


def test_validating_webhook_refuses_with_422(custom):
    vm = objects.make_vm('refused', efi=True, secure_boot=True)
    del vm['spec']['template']['spec']['domain']['features']
    with pytest.raises(client.ApiException) as exc:
        custom.create_namespaced_custom_object(*KV, 'default', VMS, vm)
    assert exc.value.status == 422
    expected = admission.denied(admission.validate_vm(vm)).to_status()
    assert apitools.body(exc.value) == expected
    assert get(custom, VMS, 'refused') is None


def test_datavolume_imports_over_http(custom, images, control_plane):
    custom.create_namespaced_custom_object(*CDI, 'default', DVS, {
        'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
        'metadata': {'name': 'iso'},
        'spec': {'source': {'http': {'url': images + '/image.iso'}},
                 'storage': {'resources': {'requests': {
                     'storage': '1Mi'}}}}})
    dv = until(lambda: (lambda dv: dv if dv and dv.get('status', {}).get(
        'phase') == 'Succeeded' else None)(get(custom, DVS, 'iso', CDI)))
    assert dv['status']['progress'] == '100.0%'
    core = client.CoreV1Api(custom.api_client)
    pvc = core.read_namespaced_persistent_volume_claim('iso', 'default')
    assert pvc.status.phase == 'Bound'
    assert pvc.spec.volume_name == 'pvc-%s' % pvc.metadata.uid
    assert pvc.metadata.owner_references[0].uid == dv['metadata']['uid']


def test_kube_controller_manager_collects_a_deleted_vms_media(custom):
    vm, vmi = start_vm(custom, 'doomed')
    owner = [{'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
              'name': 'doomed', 'uid': vm['metadata']['uid'],
              'controller': True, 'blockOwnerDeletion': True}]
    core = client.CoreV1Api(custom.api_client)
    core.create_namespaced_secret('default', {
        'metadata': {'name': 'doomed-media', 'ownerReferences': owner},
        'stringData': {'accessKeyId': 'a', 'secretKey': 'b'}})
    custom.create_namespaced_custom_object(*CDI, 'default', DVS, {
        'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
        'metadata': {'name': 'doomed-media', 'ownerReferences': owner},
        'spec': {'source': {'blank': {}}, 'storage': {
            'resources': {'requests': {'storage': '1Mi'}}}}})
    until(lambda: (get(custom, DVS, 'doomed-media', CDI) or {}).get(
        'status', {}).get('phase') == 'Succeeded')
    custom.delete_namespaced_custom_object(*KV, 'default', VMS, 'doomed')

    def gone():
        secrets = core.list_namespaced_secret(
            'default', field_selector='metadata.name=doomed-media').items
        claims = core.list_namespaced_persistent_volume_claim(
            'default', field_selector='metadata.name=doomed-media').items
        return not secrets and not claims and all(
            get(custom, plural, name, api) is None for plural, name, api in (
                (DVS, 'doomed-media', CDI), (DVS, 'doomed-root', CDI),
                (VMIS, 'doomed', KV)))
    until(gone)


def test_controllers_survive_an_apiserver_restart(custom, control_plane,
                                                  caplog):
    caplog.set_level(logging.INFO, logger=remote.LOG.name)
    start_vm(custom, 'survivor')
    control_plane.compact_etcd()
    # kill -9: every watch is cut; the new watch cache starts at etcd's
    # compacted revision, so resuming the watches is 410 Gone: relist.
    control_plane.kill_apiserver()
    control_plane.start_apiserver()
    response = until(lambda: _try(vmtools.action, custom, 'survivor',
                                  'stop'))
    assert response.status_code == 202
    until(lambda: status_is(custom, 'survivor', 'Stopped'))
    start_vm(custom, 'newcomer')
    assert 'expired: relisting' in caplog.text


def _try(fn, *args):
    """``fn(*args)``, or None while the aggregated API is unavailable."""
    try:
        return fn(*args)
    except client.ApiException as exc:
        if exc.status != 503:
            raise
        return None
