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

"""The shard setting and which shard owns a namespace."""

import collections

import pytest

from sushy_kubevirt import config

KEY = config.PREFIX + 'SHARD'
NAMES = ['team-%d' % index for index in range(3000)]


def test_unset_is_no_sharding():
    assert config.load({}).shard is None


def test_a_shard_owns_its_namespaces():
    shard = config.load({KEY: '1/3'}).shard
    assert (shard.index, shard.count, str(shard)) == (1, 3, '1/3')
    assert [shard.owns(name) for name in NAMES] == \
        [config.owner(name, 3) == 1 for name in NAMES]


def test_every_namespace_has_one_owner_and_shards_are_even():
    counts = collections.Counter(config.owner(name, 3) for name in NAMES)
    assert sorted(counts) == [0, 1, 2]
    assert min(counts.values()) > 900


def test_a_new_shard_moves_only_what_it_wins():
    moved = [name for name in NAMES
             if config.owner(name, 3) != config.owner(name, 4)]
    assert all(config.owner(name, 4) == 3 for name in moved)
    assert 600 < len(moved) < 900


@pytest.mark.parametrize('value', ['3/3', '1', '-1/3', 'a/b', '1/0', 1, ''])
def test_wrong_values_name_the_key(value):
    with pytest.raises(config.ConfigError, match=KEY):
        config.load({KEY: value})


def test_a_shard_owning_none_of_the_namespaces_stops_the_start():
    owned = [name for name in NAMES[:50] if config.owner(name, 2) == 0]
    with pytest.raises(config.ConfigError, match='owns none'):
        config.load({KEY: '1/2', config.PREFIX + 'NAMESPACES': owned})
