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

"""The accounts settings: their source, file and access cache."""

import pytest

from sushy_kubevirt import config

KEY = config.PREFIX


def test_defaults():
    settings = config.load({})
    assert (settings.accounts_source, settings.accounts_file,
            settings.access_cache_ttl) == ('file', None, 10.0)
    assert config.load({KEY + 'ACCOUNTS_SOURCE': 'kubernetes',
                        KEY + 'ACCESS_CACHE_TTL': 0}).access_cache_ttl == 0


@pytest.mark.parametrize('settings, words', [
    ({KEY + 'ACCOUNTS_SOURCE': 'ldap'}, 'one of file, kubernetes'),
    ({KEY + 'ACCOUNTS_SOURCE': 'kubernetes',
      KEY + 'ACCOUNTS_FILE': '/etc/accounts.yaml'}, 'RBAC decides'),
    ({KEY + 'ACCESS_CACHE_TTL': -1}, 'ACCESS_CACHE_TTL'),
    ({KEY + 'ACCOUNTS_FILE': ''}, 'ACCOUNTS_FILE'),
])
def test_wrong_values_name_the_key(settings, words):
    with pytest.raises(config.ConfigError, match=words):
        config.load(settings)
