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

"""The session store against a fake cluster, with a fake clock."""

import pytest

from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.redfish import sessions


class FakeCluster:
    """Secrets of one namespace, with resourceVersions."""

    def __init__(self):
        self.secrets = {}
        self.version = 0
        self.patches = []

    def _bump(self, secret):
        self.version += 1
        secret['metadata']['resourceVersion'] = str(self.version)
        return secret

    def create_secret(self, namespace, body):
        self.secrets[body['metadata']['name']] = self._bump(body)

    def get_secret(self, namespace, name):
        return self.secrets.get(name)

    def list_secrets(self, namespace, selector):
        return list(self.secrets.values())

    def patch_secret(self, namespace, name, ops):
        secret = self.secrets[name]
        if ops[0]['value'] != secret['metadata']['resourceVersion']:
            raise apierrors.Conflict('changed')
        self.patches.append(ops)
        secret['metadata']['annotations'][sessions.USED] = ops[1]['value']
        self._bump(secret)

    def delete_secret(self, namespace, name):
        if self.secrets.pop(name, None) is None:
            raise apierrors.NotFound('gone')


@pytest.fixture
def clock():
    now = [1000.0]
    return now


@pytest.fixture
def store(clock):
    return sessions.Store(FakeCluster(), 'default', timeout=100,
                          clock=lambda: clock[0])


def test_token_is_not_stored_and_authenticates(store):
    session, token = store.create('admin')
    secret = store.cluster.secrets[sessions.PREFIX + session.id]
    assert token not in str(secret)
    assert store.authenticate(token) == session
    assert store.authenticate(token + 'x') is None
    assert store.authenticate(session.id) is None
    assert store.authenticate('../../etc.x') is None


def test_inactivity_timeout_and_refresh(store, clock):
    session, token = store.create('admin')
    clock[0] += 60
    assert store.authenticate(token) is not None   # refreshed (>= 10 s)
    assert len(store.cluster.patches) == 1
    clock[0] += 5
    assert store.authenticate(token) is not None   # too soon to write
    assert len(store.cluster.patches) == 1
    clock[0] += 90   # 95 s after the last recorded use
    assert store.authenticate(token) is not None
    assert len(store.cluster.patches) == 2
    clock[0] += 101
    assert store.authenticate(token) is None
    assert store.cluster.secrets == {}   # expired: deleted


def test_list_and_delete(store, clock):
    first, _ = store.create('admin')
    clock[0] += 1
    second, token = store.create('other')
    assert [s.id for s in store.list()] == [first.id, second.id]
    assert store.delete(first.id) is True
    assert store.delete(first.id) is False
    assert store.get(first.id) is None
    assert store.get(second.id).user == 'other'
    clock[0] += 200
    assert store.list() == []


@pytest.mark.parametrize('value', [0, -1, 'x', True, 1.5])
def test_bad_timeout_names_the_key(value):
    with pytest.raises(ValueError, match=sessions.TIMEOUT_KEY):
        sessions.settings({sessions.TIMEOUT_KEY: value}, None)


def test_namespace_defaults():
    assert sessions.settings({}, ('a', 'b')) == ('a', 1800)
    assert sessions.settings({}, None) == ('default', 1800)
    assert sessions.settings({sessions.NAMESPACE_KEY: 'x'}, ('a',))[0] == 'x'


def test_a_login_deletes_expired_sessions(store, clock):
    old, _ = store.create('admin')
    clock[0] += 101
    new, _ = store.create('admin')
    assert set(store.cluster.secrets) == {sessions.PREFIX + new.id}


def test_session_keys_are_known_settings(caplog):
    """The sessions' documented keys draw no "Unknown setting" warning."""
    config.warn_unknown({sessions.TIMEOUT_KEY: 60,
                         sessions.NAMESPACE_KEY: 'lab'})
    assert 'Unknown setting' not in caplog.text
