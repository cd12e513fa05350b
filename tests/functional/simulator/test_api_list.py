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

"""List semantics: selectors, resourceVersion rules, pagination."""

import json

from kubernetes import client
import pytest
from tests.functional.simulator import apitools

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
pytestmark = pytest.mark.simulator(install=False)


def _names(result):
    return [o['metadata']['name'] for o in result['items']]


@pytest.fixture
def seeded(custom, simulator):
    apitools.ensure_namespace(simulator, 'other')
    apitools.create(custom, 'a', labels={'tier': 'web', 'env': 'prod'})
    apitools.create(custom, 'b', labels={'tier': 'db', 'env': 'prod'})
    apitools.create(custom, 'c', labels={'tier': 'web'})
    apitools.create(custom, 'd', namespace='other', labels={'tier': 'web'})
    return custom


def test_namespaced_and_all_namespaces(seeded):
    listed = seeded.list_namespaced_custom_object(G, V, 'default', P)
    assert listed['kind'] == 'WidgetList'
    assert listed['apiVersion'] == 'sim.example.com/v1'
    assert _names(listed) == ['a', 'b', 'c']
    assert all(o['kind'] == 'Widget' for o in listed['items'])
    assert _names(seeded.list_cluster_custom_object(G, V, P)) == \
        ['a', 'b', 'c', 'd']


@pytest.mark.parametrize('selector,expected', [
    ('tier=web', ['a', 'c', 'd']),
    ('tier==web', ['a', 'c', 'd']),
    ('tier!=web', ['b']),
    ('tier in (web,db),env', ['a', 'b']),
    ('tier notin (db)', ['a', 'c', 'd']),
    ('env', ['a', 'b']),
    ('!env', ['c', 'd']),
    ('tier=web,!env', ['c', 'd']),
])
def test_label_selectors(seeded, selector, expected):
    listed = seeded.list_cluster_custom_object(G, V, P,
                                               label_selector=selector)
    assert _names(listed) == expected


def test_bad_label_selector_is_400(seeded):
    with pytest.raises(client.ApiException) as exc:
        seeded.list_cluster_custom_object(G, V, P, label_selector='a in b')
    assert exc.value.status == 400


def test_field_selectors(seeded):
    assert _names(seeded.list_cluster_custom_object(
        G, V, P, field_selector='metadata.name=b')) == ['b']
    assert _names(seeded.list_cluster_custom_object(
        G, V, P, field_selector='metadata.namespace=other')) == ['d']
    assert _names(seeded.list_cluster_custom_object(
        G, V, P, field_selector='metadata.namespace!=other,'
                                'metadata.name!=a')) == ['b', 'c']


def test_unsupported_field_selector_is_400(seeded):
    with pytest.raises(client.ApiException) as exc:
        seeded.list_cluster_custom_object(G, V, P,
                                          field_selector='spec.size=1')
    assert exc.value.status == 400
    status = apitools.body(exc.value)
    assert status['reason'] == 'BadRequest'
    assert status['message'] == 'field label not supported: spec.size'


@pytest.mark.parametrize('params,message', [
    ({'resource_version_match': 'Exact'},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
     'Forbidden: resourceVersionMatch is forbidden unless resourceVersion '
     'is provided'),
    ({'resource_version': '0', 'resource_version_match': 'Exact'},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
     'Forbidden: resourceVersionMatch "exact" is forbidden for '
     'resourceVersion "0"'),
    ({'resource_version': '5', 'resource_version_match': 'Newest'},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
     'Unsupported value: "Newest": supported values: "Exact", '
     '"NotOlderThan", ""'),
])
def test_resource_version_match_validation_is_422(seeded, params, message):
    with pytest.raises(client.ApiException) as exc:
        seeded.list_namespaced_custom_object(G, V, 'default', P, **params)
    assert exc.value.status == 422
    status = apitools.body(exc.value)
    assert status['reason'] == 'Invalid'
    assert status['message'] == message
    assert status['details']['kind'] == 'ListOptions'
    assert status['details']['group'] == 'meta.k8s.io'


def test_match_with_continue_is_422(seeded):
    page = seeded.list_namespaced_custom_object(G, V, 'default', P, limit=1)
    with pytest.raises(client.ApiException) as exc:
        seeded.list_namespaced_custom_object(
            G, V, 'default', P, limit=1, _continue=page['metadata'][
                'continue'], resource_version='1',
            resource_version_match='NotOlderThan')
    assert exc.value.status == 422
    assert 'resourceVersionMatch is forbidden when continue is provided' in \
        apitools.body(exc.value)['message']


def test_resource_version_unset_zero_and_not_older_than(seeded, simulator):
    rv = str(simulator.store.resource_version)
    for params in ({}, {'resource_version': '0'},
                   {'resource_version': rv},
                   {'resource_version': rv,
                    'resource_version_match': 'NotOlderThan'}):
        listed = seeded.list_namespaced_custom_object(G, V, 'default', P,
                                                      **params)
        assert listed['metadata']['resourceVersion'] == rv
        assert _names(listed) == ['a', 'b', 'c']


def test_future_resource_version_is_504_too_large(seeded, simulator):
    future = simulator.store.resource_version + 100
    with pytest.raises(client.ApiException) as exc:
        seeded.list_namespaced_custom_object(G, V, 'default', P,
                                             resource_version=str(future))
    assert exc.value.status == 504
    status = apitools.body(exc.value)
    assert status['reason'] == 'Timeout'
    assert status['details']['causes'][0]['reason'] == \
        'ResourceVersionTooLarge'
    assert status['details']['retryAfterSeconds'] == 1


def test_exact_list_rebuilds_old_state(seeded, simulator):
    rv = simulator.store.resource_version
    seeded.delete_namespaced_custom_object(G, V, 'default', P, 'a')
    seeded.patch_namespaced_custom_object(G, V, 'default', P, 'b',
                                          {'spec': {'size': 7}})
    apitools.create(seeded, 'e')
    listed = seeded.list_namespaced_custom_object(
        G, V, 'default', P, resource_version=str(rv),
        resource_version_match='Exact')
    assert listed['metadata']['resourceVersion'] == str(rv)
    assert _names(listed) == ['a', 'b', 'c']
    assert listed['items'][1]['spec'] == {'size': 1}


def test_exact_and_legacy_limit_on_compacted_rv_are_410(seeded, simulator):
    rv = simulator.store.resource_version
    apitools.create(seeded, 'e')
    simulator.store.compact()
    for params in ({'resource_version_match': 'Exact'}, {'limit': 2}):
        with pytest.raises(client.ApiException) as exc:
            seeded.list_namespaced_custom_object(
                G, V, 'default', P, resource_version=str(rv), **params)
        assert exc.value.status == 410
        status = apitools.body(exc.value)
        assert status['reason'] == 'Expired'
        assert status['message'] == \
            'The resourceVersion for the provided list is too old.'


def test_limit_and_continue_pages_at_one_resource_version(seeded):
    page = seeded.list_cluster_custom_object(G, V, P, limit=3)
    assert _names(page) == ['a', 'b', 'c']
    assert page['metadata']['remainingItemCount'] == 1
    rv = page['metadata']['resourceVersion']
    apitools.create(seeded, 'aa')  # must not show up in the next page
    seeded.delete_namespaced_custom_object(G, V, 'other', P, 'd')
    nxt = seeded.list_cluster_custom_object(
        G, V, P, limit=3, _continue=page['metadata']['continue'])
    assert _names(nxt) == ['d']
    assert nxt['metadata']['resourceVersion'] == rv
    # A custom resource list (unstructured) always carries continue.
    assert nxt['metadata']['continue'] == ''
    assert 'remainingItemCount' not in nxt['metadata']


def test_remaining_item_count_absent_with_selector(seeded):
    page = seeded.list_cluster_custom_object(G, V, P, limit=1,
                                             label_selector='tier=web')
    assert page['metadata']['continue']
    assert 'remainingItemCount' not in page['metadata']


def test_expired_continue_is_410_with_inconsistent_token(seeded, simulator):
    page = seeded.list_cluster_custom_object(G, V, P, limit=2)
    apitools.create(seeded, 'e')
    simulator.store.compact()
    with pytest.raises(client.ApiException) as exc:
        seeded.list_cluster_custom_object(
            G, V, P, limit=2, _continue=page['metadata']['continue'])
    assert exc.value.status == 410
    status = json.loads(exc.value.body)
    assert status['reason'] == 'Expired'
    assert status['message'].startswith(
        'The provided continue parameter is too old to display a '
        'consistent list result.')
    token = status['metadata']['continue']
    rest = seeded.list_cluster_custom_object(G, V, P, limit=10,
                                             _continue=token)
    assert _names(rest) == ['c', 'e', 'd']  # key order: namespace/name


def test_resource_version_zero_ignores_limit(seeded):
    listed = seeded.list_cluster_custom_object(G, V, P, limit=1,
                                               resource_version='0')
    assert len(listed['items']) == 4
    assert listed['metadata']['continue'] == ''
