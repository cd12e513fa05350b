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

"""Label and field selector parsing."""

import pytest

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import selectors
from sushy_kubevirt.simulator import storage

RT = storage.ResourceType('g', 'v1', 'things', 'Thing')
CLUSTER_RT = storage.ResourceType('g', 'v1', 'tops', 'Top', namespaced=False)


@pytest.mark.parametrize('selector,labels,expected', [
    ('a=1', {'a': '1'}, True),
    ('a==1', {'a': '2'}, False),
    ('a!=1', {}, True),
    ('a in (1, 2)', {'a': '2'}, True),
    ('a in (1,2)', {}, False),
    ('a notin (1,2)', {}, True),
    ('a', {'a': ''}, True),
    ('!a', {'a': ''}, False),
    ('a>3', {'a': '4'}, True),
    ('a<3', {'a': 'x'}, False),
    ('example.com/x=y,b', {'example.com/x': 'y', 'b': '1'}, True),
    ('a=', {'a': ''}, True),
])
def test_label_selector(selector, labels, expected):
    assert selectors.parse_labels(selector)(labels) is expected


@pytest.mark.parametrize('selector', ['a in b', 'a=1,', 'a=(', '=a',
                                      'a in (1', 'a=b c'])
def test_bad_label_selector(selector):
    with pytest.raises(apistatus.ApiError) as exc:
        selectors.parse_labels(selector)
    assert exc.value.code == 400


def test_empty_selectors_match_everything():
    assert selectors.matcher('', None, RT) is None


def test_field_selector_name_and_namespace():
    match = selectors.parse_fields('metadata.name=a,metadata.namespace!=x',
                                   RT)
    assert match({'metadata': {'name': 'a', 'namespace': 'y'}})
    assert not match({'metadata': {'name': 'a', 'namespace': 'x'}})


@pytest.mark.parametrize('selector,rt', [
    ('spec.x=1', RT), ('metadata.namespace=a', CLUSTER_RT)])
def test_unsupported_field_label(selector, rt):
    with pytest.raises(apistatus.ApiError) as exc:
        selectors.parse_fields(selector, rt)
    assert exc.value.code == 400
    assert exc.value.message == 'field label not supported: ' + \
        selector.split('=')[0]
