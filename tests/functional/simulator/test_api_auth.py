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

"""Token authentication and the authorization table."""

import json

from kubernetes import client
from kubernetes import config
import pytest
from tests.functional.simulator import apitools

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)


def _client_for(simulator, tmp_path, token):
    path = simulator.write_kubeconfig(str(tmp_path / token),
                                      user_token=token)
    return config.new_client_from_config(config_file=path)


def test_bad_token_is_401(simulator, tmp_path):
    api = client.CustomObjectsApi(_client_for(simulator, tmp_path, 'nope'))
    with pytest.raises(client.ApiException) as exc:
        api.list_namespaced_custom_object(G, V, 'default', P)
    assert exc.value.status == 401
    assert json.loads(exc.value.body)['reason'] == 'Unauthorized'


def test_denied_verb_is_403_with_kube_message(simulator, tmp_path, custom):
    simulator.authz.add_token('reader-token', 'reader')
    simulator.authz.allow(user='reader', verb='list')
    simulator.authz.allow(user='reader', verb='get')
    simulator.authz.deny(user='reader')
    api = client.CustomObjectsApi(
        _client_for(simulator, tmp_path, 'reader-token'))
    assert api.list_namespaced_custom_object(G, V, 'default', P)['items'] \
        == []
    with pytest.raises(client.ApiException) as exc:
        api.create_namespaced_custom_object(G, V, 'default', P,
                                            apitools.widget('a'))
    assert exc.value.status == 403
    status = json.loads(exc.value.body)
    assert status['reason'] == 'Forbidden'
    assert status['message'] == (
        'widgets.sim.example.com is forbidden: User "reader" cannot create '
        'resource "widgets" in API group "sim.example.com" in the '
        'namespace "default"')
    apitools.create(custom, 'a')
    with pytest.raises(client.ApiException) as exc:
        api.patch_namespaced_custom_object_status(
            G, V, 'default', P, 'a', {'status': {}})
    assert json.loads(exc.value.body)['message'] == (
        'widgets.sim.example.com "a" is forbidden: User "reader" cannot '
        'patch resource "widgets/status" in API group "sim.example.com" in '
        'the namespace "default"')


def test_watch_denied_before_streaming(simulator, custom):
    simulator.authz.deny(verb='watch', namespace='default')
    with pytest.raises(client.ApiException) as exc:
        custom.list_namespaced_custom_object(G, V, 'default', P, watch=True,
                                             timeout_seconds=1)
    assert exc.value.status == 403
    assert 'cannot watch resource "widgets"' in \
        json.loads(exc.value.body)['message']
    assert simulator.request_log.count(verb='watch', status=403) == 1


def test_namespace_scoped_rule(simulator, custom):
    apitools.ensure_namespace(simulator, 'other')
    simulator.authz.deny(namespace='other', resource='widgets')
    apitools.create(custom, 'a')
    with pytest.raises(client.ApiException) as exc:
        apitools.create(custom, 'b', namespace='other')
    assert exc.value.status == 403
    # An all-namespaces list is a cluster-scope request: not this rule.
    listed = custom.list_cluster_custom_object(G, V, P)
    assert [o['metadata']['name'] for o in listed['items']] == ['a']
