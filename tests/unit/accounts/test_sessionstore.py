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

"""The session store against a fake cluster and watch, with a fake clock."""

import copy

import pytest

from sushy_kubevirt.accounts import sessionstore
from sushy_kubevirt.accounts import sessiontimeout
from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt import messages


class FakeCluster:
    """Secrets of one namespace, with resourceVersions."""

    def __init__(self):
        self.secrets = {}
        self.version = 0
        self.patches = []
        self.calls = 0

    def _bump(self, secret):
        self.version += 1
        secret['metadata']['resourceVersion'] = str(self.version)
        return copy.deepcopy(secret)

    def create_secret(self, namespace, body):
        self.calls += 1
        if body['metadata']['name'] in self.secrets:
            raise apierrors.Conflict('exists')
        body = copy.deepcopy(body)
        self.secrets[body['metadata']['name']] = body
        return self._bump(body)

    def get_secret(self, namespace, name):
        self.calls += 1
        return copy.deepcopy(self.secrets.get(name))

    def version_of(self, name):
        return self.secrets[name]['metadata']['resourceVersion']

    def list_secrets_page(self, namespace, selector, limit, token=None):
        self.calls += 1
        wanted = dict(term.split('=') for term in selector.split(','))
        found = [s for s in self.secrets.values() if all(
            s['metadata'].get('labels', {}).get(k) == v
            for k, v in wanted.items())]
        start = int(token or 0)
        more = start + limit < len(found)
        return (copy.deepcopy(found[start:start + limit]),
                str(start + limit) if more else None)

    def patch_secret(self, namespace, name, ops):
        self.calls += 1
        if name not in self.secrets:
            raise apierrors.NotFound('gone')
        secret = self.secrets[name]
        if ops[0]['value'] != secret['metadata']['resourceVersion']:
            raise apierrors.Conflict('changed')
        self.patches.append(ops)
        for op in ops[1:]:
            parts = [p.replace('~1', '/').replace('~0', '~')
                     for p in op['path'].split('/')[1:]]
            target = secret
            for part in parts[:-1]:
                target = target[part]
            target[parts[-1]] = op['value']
        return self._bump(secret)

    def delete_secret(self, namespace, name):
        self.calls += 1
        if self.secrets.pop(name, None) is None:
            raise apierrors.NotFound('gone')


class FakeCache:
    """The cluster's Secrets as its watch delivered them.

    :meth:`hold` keeps them as they are now, :meth:`catch_up` lets the
    watch deliver again.
    """

    def __init__(self, cluster):
        self.cluster = cluster
        self.held = None

    def hold(self):
        self.held = copy.deepcopy(self.cluster.secrets)

    def catch_up(self):
        self.held = None

    def get(self, namespace, name):
        found = self.cluster.secrets if self.held is None else self.held
        return copy.deepcopy(found.get(name))

    def note_write(self, obj):
        pass   # the cluster's Secrets are what it reads


@pytest.fixture
def clock():
    now = [1000.0]
    return now


@pytest.fixture
def store(clock):
    made = sessionstore.Store(FakeCluster(), sessionstore.Settings(
        'default', timeout=100, limit=3), clock=lambda: clock[0])
    made.watch = FakeCache(made.cluster)
    made._cache = made.timeouts._cache = lambda: made.watch
    return made


def test_token_is_not_stored_and_authenticates(store):
    session, token = store.create('admin')
    secret = store.cluster.secrets[sessionstore.PREFIX + session.id]
    assert token not in str(secret)
    assert store.authenticate(token) == session
    assert store.authenticate(token + 'x') is None
    assert store.authenticate(session.id) is None
    assert store.authenticate('../../etc.x') is None


def test_inactivity_timeout_and_refresh(store, clock):
    session, token = store.create('admin')
    clock[0] += 60
    assert store.authenticate(token) is not None   # refreshed (>= 10 s)
    assert len([p for p in store.cluster.patches
                if 'last-used' in p[1]['path']]) == 1
    clock[0] += 5
    assert store.authenticate(token) is not None   # too soon to write
    assert len(store.cluster.patches) == 1
    clock[0] += 90   # 95 s after the last recorded use
    assert store.authenticate(token) is not None
    assert len(store.cluster.patches) == 2
    clock[0] += 101
    assert store.authenticate(token) is None
    assert set(store.cluster.secrets) == {sessionstore.KEY_NAME}   # deleted


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
    with pytest.raises(ValueError, match=sessionstore.TIMEOUT_KEY):
        sessionstore.settings({sessionstore.TIMEOUT_KEY: value}, None)


def test_namespace_defaults():
    found = sessionstore.settings({}, ('a', 'b'))
    assert (found.namespace, found.timeout, found.limit) == ('a', 1800, 100)
    assert sessionstore.settings({}, None).namespace == 'default'
    assert sessionstore.settings({sessionstore.NAMESPACE_KEY: 'x'},
                                 ('a',)).namespace == 'x'


def test_a_login_deletes_expired_sessions(store, clock):
    old, _ = store.create('admin')
    clock[0] += 101
    new, _ = store.create('admin')
    assert set(store.cluster.secrets) == {sessionstore.PREFIX + new.id,
                                          sessionstore.KEY_NAME}


def test_session_keys_are_known_settings(caplog):
    """The sessions' documented keys draw no "Unknown setting" warning."""
    config.warn_unknown({sessionstore.TIMEOUT_KEY: 60,
                         sessionstore.NAMESPACE_KEY: 'lab'})
    assert 'Unknown setting' not in caplog.text


def test_a_made_up_or_stale_token_costs_no_api_call(store):
    session, token = store.create('admin')
    sid, _, rest = token.partition('.')
    before = store.cluster.calls
    for forged in ('%s.%s' % (sid, 'x' * 43 + '.' + 'y' * 24),
                   'f' * 16 + '.' + rest, 'x' * 500, '', '.', '..'):
        assert store.authenticate(forged) is None
    assert store.cluster.calls == before
    assert store.delete(session.id)
    before = store.cluster.calls
    for _ in range(3):
        assert store.authenticate(token) is None
    assert store.cluster.calls == before


def test_the_limit_is_counted_without_listing_everything(store, clock):
    for _ in range(3):
        store.create('admin')
    with pytest.raises(messages.RedfishError) as caught:
        store.create('other')
    assert caught.value.message_id == 'SessionLimitExceeded'
    assert caught.value.code == 503
    clock[0] += 101   # all expired: deleted by the next login's count
    store.create('other')


@pytest.mark.parametrize('change', [
    {'name': 'foreign'},
    {'annotations': {sessionstore.CREATED: '9' * 40}},
    {'annotations': {sessionstore.USED: '-1'}},
    {'annotations': {sessionstore.USER: 'someone-else'}},
    {'data': None},
])
def test_bad_session_secrets_are_ignored_and_logged(store, caplog, change):
    session, _ = store.create('admin')
    name = sessionstore.PREFIX + session.id
    secret = store.cluster.secrets.pop(name)
    meta = secret['metadata']
    meta['name'] = change.get('name', name)
    meta['annotations'].update(change.get('annotations', {}))
    if 'data' in change:
        secret['data'] = {}
    store.cluster.secrets[meta['name']] = secret
    assert store.list() == []
    assert store.get(session.id) is None
    assert 'not a well-formed session' in caplog.text


def test_owners_see_only_their_sessions(store):
    mine, _ = store.create('admin')
    theirs, _ = store.create('other')
    assert [s.id for s in store.list('admin')] == [mine.id]
    assert store.get(theirs.id, 'admin') is None
    assert store.get(theirs.id, 'other') == theirs


def test_groups_are_kept_with_the_session(store):
    session, token = store.create('system:serviceaccount:lab:ironic',
                                  ('system:serviceaccounts', 'team-a'))
    assert store.authenticate(token).groups == (
        'system:serviceaccounts', 'team-a')
    assert store.create('admin')[0].groups == ()
    secret = store.cluster.secrets[sessionstore.PREFIX + session.id]
    secret['metadata']['annotations'][sessionstore.GROUPS] = '{"a": 1}'
    assert store.get(session.id) is None   # edited into nonsense: ignored


def test_a_known_token_is_read_from_the_cache(store):
    session, token = store.create('admin')
    before = store.cluster.calls
    for _ in range(3):
        assert store.authenticate(token) == session
    assert store.get(session.id) == session
    assert store.cluster.calls == before


def test_a_session_the_cache_lacks_costs_one_live_get(store):
    store.watch.hold()   # the watch has not delivered the login yet
    session, token = store.create('admin')
    before = store.cluster.calls
    assert store.authenticate(token) == session
    assert store.cluster.calls == before + 1
    store.watch.catch_up()
    assert store.authenticate(token) == session
    assert store.cluster.calls == before + 1


def test_a_logout_elsewhere_counts_once_the_watch_delivers_it(store):
    session, token = store.create('admin')
    store.watch.hold()
    del store.cluster.secrets[sessionstore.PREFIX + session.id]
    assert store.authenticate(token) == session   # within the bound
    store.watch.catch_up()
    before = store.cluster.calls
    assert store.authenticate(token) is None   # one GET says it is gone
    assert store.authenticate(token) is None   # remembered
    assert store.cluster.calls == before + 1


def test_a_session_the_cache_finds_expired_is_read_live(store, clock):
    session, token = store.create('admin')
    store.watch.hold()
    clock[0] += 60
    assert store.authenticate(token) is not None   # refreshed, unseen
    clock[0] += 60   # expired as cached, used 60 s ago as stored
    before = store.cluster.calls
    assert store.authenticate(token) is not None
    assert store.cluster.calls == before + 2   # the GET, a refresh
    assert sessionstore.PREFIX + session.id in store.cluster.secrets


def test_a_timeout_set_holds_for_every_session(store, clock):
    session, token = store.create('alice')
    assert store.timeout == 100
    calls = store.cluster.calls
    store.timeouts.set(300)   # one create
    assert (store.timeout, store.cluster.calls) == (300, calls + 1)
    clock[0] += 200   # idle past the configured 100 s, within 300 s
    assert store.authenticate(token).id == session.id
    store.timeouts.set(60)   # one guarded patch
    assert store.cluster.patches[-1][0]['op'] == 'test'
    clock[0] += 61
    assert store.authenticate(token) is None


def test_a_timeout_write_rechecks_after_a_conflict(store):
    store.timeouts.set(300)
    store.watch.hold()
    store.cluster.patch_secret('default', sessiontimeout.SERVICE_NAME, [
        {'op': 'test', 'path': '/metadata/resourceVersion',
         'value': store.cluster.version_of(sessiontimeout.SERVICE_NAME)},
        {'op': 'add', 'path': sessiontimeout.annotation_path(
            sessiontimeout.TIMEOUT), 'value': '400'}])
    seen = []
    store.timeouts.set(500, check=seen.append)
    assert seen == [300, 400]   # the cache's, then the live read's
    store.watch.catch_up()
    assert store.timeout == 500

    def refuse(current):
        raise ValueError(current)
    with pytest.raises(ValueError):
        store.timeouts.set(600, check=refuse)
    assert store.timeout == 500
