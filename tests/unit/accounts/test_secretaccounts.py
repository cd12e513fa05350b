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

"""Account Secrets: their format, the checks remembered, guarded writes."""

import copy
import types

import bcrypt
import pytest

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import attempts
from sushy_kubevirt.accounts import secretaccounts
from sushy_kubevirt.accounts import throttle
from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors

DIGEST = bcrypt.hashpw(b'password-1', bcrypt.gensalt(4)).decode()


def secret(account, digest=DIGEST, version='1'):
    return {'metadata': {'name': secretaccounts.PREFIX + account.name,
                         'namespace': 'ns', 'uid': 'u-' + account.name,
                         'resourceVersion': version},
            'data': secretaccounts.data(account, digest)}


class FakeCache:
    def __init__(self, *secrets):
        self.objects = {s['metadata']['name']: s for s in secrets}
        self.written = []

    def get(self, namespace, name):
        return self.objects.get(name)

    def list(self):
        return list(self.objects.values())

    def note_write(self, obj):
        self.written.append(obj)


class FakeLive:
    """Patches fail ``conflicts`` times; the live object is ``latest``."""

    def __init__(self, latest, conflicts=0):
        self.latest, self.conflicts, self.patches = latest, conflicts, []

    def patch(self, resource, namespace, name, ops):
        self.patches.append(ops)
        if self.conflicts:
            self.conflicts -= 1
            raise apierrors.Conflict('test failed', status=422)
        made = copy.deepcopy(self.latest)
        made['data'] = ops[1]['value']
        made['metadata']['resourceVersion'] = 'new'
        return made

    def get(self, resource, namespace, name):
        return copy.deepcopy(self.latest)


def store(cache, live=None):
    accounts = secretaccounts.SecretAccounts(types.SimpleNamespace(
        settings=None, accounting=None), 'ns')
    accounts._synced = lambda: (live, cache)
    return accounts


def test_the_secret_holds_the_account_model():
    account = accountsfile.Account('alice', 'Operator',
                                   frozenset(['a', 'b']), 'pool=ci')
    parsed, digest = secretaccounts.parse(secret(account))
    assert parsed == account and digest == DIGEST.encode()
    assert 'password-1' not in str(secret(account))


@pytest.mark.parametrize('change', [
    lambda s: s['metadata'].update(name='sushy-user-bob'),
    lambda s: s['data'].update({'password-hash': 'eA=='}),
    lambda s: s['data'].update(role='Um9vdA=='),
    lambda s: s['data'].update(namespaces='LA=='),
    lambda s: s['data'].update(username='!!'),
])
def test_malformed_secrets_are_no_accounts(change):
    bad = secret(accountsfile.Account('alice', 'ReadOnly'))
    change(bad)
    with pytest.raises(ValueError):
        secretaccounts.parse(bad)
    assert store(FakeCache(bad)).account('alice') is None


def test_a_successful_check_is_remembered_per_version(monkeypatch):
    checks = []
    real = secretaccounts._checkpw
    monkeypatch.setattr(secretaccounts, '_checkpw',
                        lambda p, d: checks.append(p) or real(p, d))
    cache = FakeCache(secret(accountsfile.Account('alice', 'ReadOnly')))
    accounts = store(cache)
    assert accounts.verify('alice', b'password-1')
    assert accounts.verify('alice', b'password-1')
    assert len(checks) == 1
    assert not accounts.verify('alice', b'password-2')
    cache.objects['sushy-user-alice']['metadata']['resourceVersion'] = '2'
    assert accounts.verify('alice', b'password-1')
    assert len(checks) == 3
    assert not accounts.verify('alice', b'password-1' + b'x' * 72)
    assert not accounts.verify('nobody', b'password-1')
    assert not accounts.verify('Not A Name', b'password-1')


def test_a_lockout_counts_the_attempts_of_accounts():
    seen = []
    lockout = types.SimpleNamespace(attempt=lambda user, client, ok: (
        seen.append((user, client, ok)) or False))
    guard = attempts.Guard('c', throttle.Throttle(throttle.Policy()),
                           lockout)
    accounts = store(FakeCache(secret(accountsfile.Account('a', 'ReadOnly'))))
    assert not accounts.verify('a', b'password-1', guard)
    assert not accounts.verify('b', b'password-1', guard)
    # A name that is no account costs the lockout's read, counts nothing.
    assert seen == [('a', 'c', True), (None, 'c', False)]


def test_an_update_tests_the_version_and_retries_from_a_live_read():
    account = accountsfile.Account('alice', 'ReadOnly')
    live = FakeLive(secret(account, version='2'), conflicts=1)
    cache = FakeCache(secret(account))
    made = store(cache, live).update(
        'alice', lambda a: (accountsfile.Account(a.name, 'Operator'), None))
    assert [ops[0]['value'] for ops in live.patches] == ['1', '2']
    assert secretaccounts.parse(made)[0].role == 'Operator'
    assert cache.written == [made]


def test_an_update_held_to_a_version_is_not_retried():
    account = accountsfile.Account('alice', 'ReadOnly')
    live = FakeLive(secret(account), conflicts=1)
    accounts = store(FakeCache(secret(account)), live)
    with pytest.raises(apierrors.Conflict):
        accounts.update('alice', lambda a: (a, 'password-2'), version='1')
    with pytest.raises(apierrors.Conflict):
        accounts.update('alice', lambda a: (a, 'password-2'), version='0')
    assert len(live.patches) == 1
    with pytest.raises(apierrors.NotFound):
        accounts.update('bob', lambda a: (a, None))


@pytest.mark.parametrize('settings, words', [
    ({'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE': 'secrets',
      'SUSHY_EMULATOR_AUTH_FILE': '/etc/htpasswd'}, 'AUTH_FILE'),
    ({'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE': 'secrets',
      'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE': '/a.yaml'}, 'are Secrets'),
    ({'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_NAMESPACE': 'ns'},
     'ACCOUNTS_NAMESPACE'),
    ({'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE': 'secrets',
      'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_NAMESPACE': ''},
     'ACCOUNTS_NAMESPACE'),
])
def test_wrong_settings_name_the_key(settings, words):
    with pytest.raises(config.ConfigError, match=words):
        config.load(settings)


@pytest.mark.parametrize('settings, namespace', [
    ({}, 'default'),
    ({'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES': ['a', 'b']}, 'a'),
    ({'SUSHY_EMULATOR_KUBEVIRT_SESSION_NAMESPACE': 's'}, 's'),
    ({'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_NAMESPACE': 'x'}, 'x'),
])
def test_the_accounts_namespace_defaults_to_the_sessions(settings,
                                                         namespace):
    settings = dict(settings)
    settings[config.ACCOUNTS_SOURCE_KEY] = 'secrets'
    assert config.load(settings).accounts_namespace == namespace


def test_any_json_string_can_be_a_password():
    password = 'pass\ud800word'
    digest = secretaccounts.hash_password(password).encode()
    assert bcrypt.checkpw(password.encode('utf-8', 'surrogatepass'), digest)
