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

"""Label selectors: matched against an object's labels, client-side."""

import pytest

from sushy_kubevirt.kube import labelselector


@pytest.mark.parametrize('selector, labels, matches', [
    ('team=a', {'team': 'a'}, True),
    ('team==a', {'team': 'b'}, False),
    ('team!=a', {}, True),
    ('team!=a', {'team': 'a'}, False),
    ('team', {'team': ''}, True),
    ('!team', {'team': 'a'}, False),
    ('env in (lab, ci)', {'env': 'ci'}, True),
    ('env in (lab,ci)', {}, False),
    ('env notin (prod)', {}, True),
    ('team=a, env in (lab,ci), !gpu', {'team': 'a', 'env': 'lab'}, True),
    ('team=a,env in (lab,ci),!gpu', {'team': 'a', 'env': 'lab', 'gpu': 'x'},
     False),
    ('example.com/team=a', {'example.com/team': 'a'}, True),
])
def test_matches(selector, labels, matches):
    assert labelselector.parse(selector)(labels) is matches


@pytest.mark.parametrize('selector', [
    '', 'a b', 'team in a', '=x', 'x in (a,b c)', 'team=-a', 'x,'])
def test_refuses_what_is_not_a_selector(selector):
    with pytest.raises(ValueError):
        labelselector.parse(selector)


@pytest.mark.parametrize('selector', [
    'k=' + 'v' * 63, 'n' * 63 + '=v', 'p' * 253 + '/n=v',
    'example.com/' + 'n' * 63, 'k in (%s)' % ('v' * 63)])
def test_takes_the_longest_labels_kubernetes_allows(selector):
    labelselector.parse(selector)


@pytest.mark.parametrize('selector', [
    'k=' + 'v' * 64, 'n' * 64 + '=v', 'p' * 254 + '/n=v', '!' + 'n' * 64,
    'Example.com/team=a', 'a/b/c=d', 'k in (%s)' % ('v' * 64),
    'k=v,' * 25000 + 'k=v'])
def test_refuses_labels_kubernetes_refuses(selector):
    with pytest.raises(ValueError):
        labelselector.parse(selector)
