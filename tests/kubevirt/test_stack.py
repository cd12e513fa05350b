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

"""The real KubeVirt and CDI on the real control plane, nodes simulated.

One ``RealCluster(kubevirt=True)`` for the module: virt-api,
virt-controller, cdi-apiserver and cdi-controller built from their
release sources, and ``simulator.nodes``. The official client calls
kube-apiserver, as a user does: virt-api's webhooks default a VM, the
real virt-controller runs it on a simulated node, virt-api's subresources
reach the simulated virt-handler, CDI imports through the simulated
importer, and a failing import behaves as on a real cluster. They skip
where the sources or Go are missing; with CI=true that is a failure.
"""

import http.server
import threading

from kubernetes import client
from kubernetes import config
import pytest
from tests import kubevirt

from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import realcluster

KV, CDI = ('kubevirt.io', 'v1'), ('cdi.kubevirt.io', 'v1beta1')
TIMEOUT = 60.0
pytestmark = pytest.mark.timeout(900)


def until(predicate, timeout=TIMEOUT, interval=0.1):
    return clock.wait_for(predicate, timeout, interval)


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    cluster = realcluster.RealCluster(
        kubevirt=True, stage_delays={'Shutdown': 1.0},
        workdir=tmp_path_factory.mktemp('real-kubevirt'))
    kubevirt.start_or_skip(cluster)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope='module')
def api(cluster):
    return client.CustomObjectsApi(config.new_client_from_config(
        str(cluster.admin_kubeconfig)))


@pytest.fixture(scope='module')
def core(cluster):
    return client.CoreV1Api(config.new_client_from_config(
        str(cluster.admin_kubeconfig)))


@pytest.fixture(scope='module')
def image_server():
    class Image(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != '/boot.iso':
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header('Content-Length', '4')
            self.end_headers()
            self.wfile.write(b'\x00ISO')

        def log_message(self, *args):
            pass
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Image)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield 'http://127.0.0.1:%d' % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def _vm(api, name, **kwargs):
    body = objects.make_vm(name, data_volume=False, **kwargs)
    body['spec']['template']['spec']['domain'].pop('firmware')
    return api.create_namespaced_custom_object(*KV, 'default',
                                               'virtualmachines', body)


def _put(cluster, kind, name, action):
    """PUT a subresource of virt-api's, through kube-apiserver."""
    status, body = cluster.control_plane.request(
        'PUT', '/apis/subresources.kubevirt.io/v1/namespaces/default/'
        '%s/%s/%s' % (kind, name, action), {})
    assert status == 202 or status == 200, (status, body)


def _get(api, plural, name, group=KV):
    try:
        return api.get_namespaced_custom_object(*group, 'default', plural,
                                                name)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _phase(obj):
    return (obj or {}).get('status', {}).get('phase')


def test_virt_api_defaults_a_new_vm_with_random_identity(api):
    one, two = _vm(api, 'ident-a'), _vm(api, 'ident-b')
    firmware = [vm['spec']['template']['spec']['domain']['firmware']
                for vm in (one, two)]
    assert all(f.get('uuid') and f.get('serial') for f in firmware)
    assert firmware[0]['uuid'] != firmware[1]['uuid']
    assert firmware[0]['serial'] != firmware[1]['serial']


def test_a_vm_runs_on_a_simulated_node_and_stops(cluster, api, core):
    _vm(api, 'runner', run_strategy='Always')
    vmi = until(lambda: _phase(_get(api, 'virtualmachineinstances',
                                    'runner')) == 'Running' and
                _get(api, 'virtualmachineinstances', 'runner'))
    assert vmi['status']['nodeName'] == 'sim-node-0'
    pods = core.list_namespaced_pod(
        'default', label_selector='vm.kubevirt.io/name=runner').items
    assert [p.status.phase for p in pods] == ['Running']
    until(lambda: _phase(_get(api, 'virtualmachines', 'runner')) is None
          and _get(api, 'virtualmachines', 'runner')['status'].get(
              'printableStatus') == 'Running')
    _put(cluster, 'virtualmachines', 'runner', 'stop')
    until(lambda: _get(api, 'virtualmachineinstances', 'runner') is None)
    until(lambda: not core.list_namespaced_pod(
        'default', label_selector='vm.kubevirt.io/name=runner').items)
    assert _get(api, 'virtualmachines', 'runner')['status'][
        'printableStatus'] == 'Stopped'


def test_pause_goes_through_virt_api_to_the_node(cluster, api):
    _vm(api, 'pauser', run_strategy='Always')
    until(lambda: _phase(_get(api, 'virtualmachineinstances',
                              'pauser')) == 'Running')
    _put(cluster, 'virtualmachineinstances', 'pauser', 'pause')
    until(lambda: any(c['type'] == 'Paused' and c['status'] == 'True'
                      for c in _get(api, 'virtualmachineinstances',
                                    'pauser')['status']['conditions']))
    _put(cluster, 'virtualmachineinstances', 'pauser', 'unpause')
    until(lambda: not any(c['type'] == 'Paused' for c in _get(
        api, 'virtualmachineinstances', 'pauser')['status']['conditions']))


def _dv(api, name, url):
    body = {'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
            'metadata': {'name': name},
            'spec': {'source': {'http': {'url': url}},
                     'storage': {'resources': {'requests': {
                         'storage': '1Gi'}}}}}
    return api.create_namespaced_custom_object(*CDI, 'default',
                                               'datavolumes', body)


def test_cdi_imports_through_the_simulated_importer(api, core,
                                                    image_server):
    _dv(api, 'good', image_server + '/boot.iso')
    until(lambda: _phase(_get(api, 'datavolumes', 'good', CDI)) ==
          'Succeeded')
    claim = core.read_namespaced_persistent_volume_claim('good', 'default')
    assert claim.status.phase == 'Bound'
    assert claim.spec.storage_class_name == 'sim-hostpath'


def test_a_failing_import_restarts_and_never_fails(api, image_server):
    """Real CDI: the importer pod restarts; the phase is never Failed."""
    _dv(api, 'bad', image_server + '/missing.iso')

    def running_condition():
        dv = _get(api, 'datavolumes', 'bad', CDI)
        status = dv.get('status') or {}
        conditions = {c['type']: c for c in status.get('conditions') or ()}
        running = conditions.get('Running') or {}
        if status.get('restartCount', 0) >= 1 and \
                running.get('reason') == 'Error':
            return dv, running
    dv, running = until(running_condition)
    assert 'expected status code 200, got 404' in running['message']
    assert running['status'] == 'False'
    assert dv['status']['phase'] in ('ImportScheduled', 'ImportInProgress')
