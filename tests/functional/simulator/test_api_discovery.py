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

"""Discovery, /version and the DynamicClient."""

import json

from kubernetes import client
from kubernetes import dynamic
import pytest
from tests.functional.simulator import apitools

pytestmark = pytest.mark.simulator(install=False)


def test_core_discovery(kube_client):
    code, _h, data = apitools.raw(kube_client, 'GET', '/api')
    assert code == 200 and json.loads(data)['versions'] == ['v1']
    code, _h, data = apitools.raw(kube_client, 'GET', '/api/v1')
    doc = json.loads(data)
    assert doc['kind'] == 'APIResourceList' and doc['groupVersion'] == 'v1'
    names = {r['name']: r for r in doc['resources']}
    assert names['namespaces']['namespaced'] is False
    assert names['secrets']['kind'] == 'Secret'
    assert 'watch' in names['secrets']['verbs']
    assert 'persistentvolumeclaims/status' in names


def test_group_discovery(kube_client, simulator):
    simulator.register_subresource('things.example.com/v1', 'widgets',
                                   'poke', lambda *a: None)
    doc = json.loads(apitools.raw(kube_client, 'GET', '/apis')[2])
    groups = {g['name']: g for g in doc['groups']}
    assert groups['sim.example.com']['preferredVersion'] == {
        'groupVersion': 'sim.example.com/v1', 'version': 'v1'}
    assert 'storage.k8s.io' in groups and 'things.example.com' in groups
    doc = json.loads(
        apitools.raw(kube_client, 'GET', '/apis/sim.example.com')[2])
    assert doc['kind'] == 'APIGroup'
    doc = json.loads(apitools.raw(kube_client, 'GET',
                                  '/apis/sim.example.com/v1')[2])
    names = {r['name']: r for r in doc['resources']}
    assert names['widgets']['kind'] == 'Widget'
    assert names['widgets']['shortNames'] == ['wd']
    assert names['widgets/status']['verbs'] == ['get', 'patch', 'update']
    doc = json.loads(apitools.raw(kube_client, 'GET',
                                  '/apis/things.example.com/v1')[2])
    assert doc['resources'][0]['name'] == 'widgets/poke'


def test_unknown_paths_are_plain_text_404(kube_client):
    for path in ('/apis/nope.example.com/v1/widgets', '/apis/nope',
                 '/apis/sim.example.com/v2/widgets', '/healthz/x',
                 '/apis/sim.example.com/v1/namespaces/default/gadgets'):
        code, headers, data = apitools.raw(kube_client, 'GET', path)
        assert code == 404, path
        assert data == b'404 page not found\n'
        assert headers['Content-Type'].startswith('text/plain')


def test_version(kube_client):
    info = client.VersionApi(kube_client).get_code()
    assert info.major == '1' and info.git_version.startswith('v1.')


def test_dynamic_client(kube_client, custom):
    apitools.create(custom, 'a')
    dyn = dynamic.DynamicClient(kube_client)
    widgets = dyn.resources.get(api_version='sim.example.com/v1',
                                kind='Widget')
    listed = widgets.get(namespace='default')
    assert [i.metadata.name for i in listed.items] == ['a']
    widgets.patch(name='a', namespace='default', body={'spec': {'size': 4}},
                  content_type='application/merge-patch+json')
    assert widgets.get(name='a', namespace='default').spec.size == 4
    namespaces = dyn.resources.get(api_version='v1', kind='Namespace')
    assert 'default' in [n.metadata.name for n in namespaces.get().items]


def test_versions_modelled(simulator, kube_client):
    status, _headers, data = apitools.raw(kube_client, 'GET', '/version',
                                          auth=False)
    assert status == 200
    assert json.loads(data)['gitVersion'].startswith('v1.34.')
    status, _headers, data = apitools.raw(
        kube_client, 'GET', '/apis/subresources.kubevirt.io/v1/version')
    assert status == 200
    info = json.loads(data)
    assert info['gitCommit'].startswith('d923fdb8')
    assert info['gitVersion'].startswith('v1.9.0')
    status, _headers, _data = apitools.raw(
        kube_client, 'GET', '/apis/subresources.kubevirt.io/v1/version',
        auth=False)
    assert status == 401
