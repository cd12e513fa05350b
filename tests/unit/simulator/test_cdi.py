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

import pytest

from sushy_kubevirt.simulator import cdi


@pytest.mark.parametrize('quantity, expected', [
    ('10Gi', 10 * 2 ** 30),
    ('1e9', 10 ** 9),
    ('1Ei', 2 ** 60),
    ('1.1Gi', 1181116007),   # 1181116006.4, rounded up like Value()
    ('1.5G', 1_500_000_000),
    ('300k', 300_000),
    (1048576, 1048576),
])
def test_parse_quantity_gives_exact_integers(quantity, expected):
    value = cdi.parse_quantity(quantity)
    assert value == expected
    assert type(value) is int


@pytest.mark.parametrize('quantity', ['ten', '1Gb', ''])
def test_parse_quantity_rejects_garbage(quantity):
    with pytest.raises(ValueError):
        cdi.parse_quantity(quantity)


@pytest.mark.parametrize('initial, target, same', [
    ('http://a.example/x', 'http://a.example:81/y', True),
    ('http://a.example/x', 'http://img.a.example/y', True),
    ('http://a.example/x', 'http://b.example/y', False),
    ('http://a.example/x', 'http://evila.example/y', False),
])
def test_credentials_follow_only_the_same_site(initial, target, same):
    assert cdi._same_site(initial, target) is same
