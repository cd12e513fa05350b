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

"""Redfish sessions kept in Kubernetes: one Secret per session.

Every gunicorn worker and every replica must accept a token as soon as
the login answered, and refuse it once the logout answered, so the
session itself is the shared state: ``POST .../Sessions`` creates a
Secret ``sushy-session-<id>`` (labels :data:`LABEL` and :data:`OWNER`)
holding the user, the times and the SHA-256 of the token, never the
token. Each process reads the session Secrets from its own watch cache
(:mod:`.labelwatch`), so a request with a known ``X-Auth-Token`` makes
no API call. A session the cache does not hold - made by another
process since the watch's last event - costs one live GET, and so does
one the cache finds expired (another process may have used it since):
only the API server's answer refuses a token. A logout is seen by the
process that answered it at once, and by the others when their watch
delivers the deletion (milliseconds).

A token is ``<id>.<random>.<tag>``, the tag an HMAC of the rest with a
key every process shares (the Secret :data:`KEY_NAME`, made by the first
login): a made-up token is refused with no API call, and the id of a
session found gone is remembered (:data:`GONE` ids per process), so a
stale token costs one GET per process, once.

``SessionTimeout`` is an inactivity timeout: a session unused for that
long is refused and deleted. Its last use is written back (one patch
guarded by the resourceVersion read) at most once per tenth of the
timeout. The timeout is the configured one until one is set through
Redfish (:mod:`.sessiontimeout`), which applies to every session from
then on, those already open included.

At most ``limit`` sessions exist at once (``SessionLimitExceeded`` past
it); a login counts them with live paged lists that stop at the limit,
and the Sessions collection is a live list too. Secrets with the label
that are not well-formed sessions are ignored, with a log line.
"""

import base64
import collections
import dataclasses
import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import time

from sushy_kubevirt.accounts import clients
from sushy_kubevirt.accounts import labelwatch
from sushy_kubevirt.accounts import lockout
from sushy_kubevirt.accounts import sessiontimeout
from sushy_kubevirt.accounts import throttle
from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt import messages

LOG = logging.getLogger(__name__)
LABEL = 'sushy-kubevirt.io/session'
#: Label of the owner: the start of the SHA-256 of the user name.
OWNER = 'sushy-kubevirt.io/session-owner'
USER = 'sushy-kubevirt.io/user'
#: The user's Kubernetes groups (a JSON list), when the cluster's RBAC
#: decides access.
GROUPS = 'sushy-kubevirt.io/groups'
CREATED = 'sushy-kubevirt.io/created'
USED = 'sushy-kubevirt.io/last-used'
PREFIX = 'sushy-session-'
DIGEST = 'token-sha256'
KEY_NAME = 'sushy-session-key'
KEY_DATA = 'hmac-key'
#: Redfish's SessionTimeout range is 30..86400 s; a config may go lower.
DEFAULT_TIMEOUT = 1800
DEFAULT_LIMIT = 100
#: Ids of sessions found gone that a process remembers.
GONE = 4096
_PAGE = 100
_MAX_PAGES = 100
_MAX_TOKEN = 200
_MAX_USER = 256
_MAX_TIME = 2 ** 33   # year 2242: within time.gmtime's range
_ID = re.compile(r'^[0-9a-f]{16}$')
_TIME = re.compile(r'^[0-9]{1,11}$')
_HEX64 = re.compile(r'^[0-9a-f]{64}$')

TIMEOUT_KEY = config.SESSION_TIMEOUT_KEY
NAMESPACE_KEY = config.SESSION_NAMESPACE_KEY
LIMIT_KEY = config.SESSION_LIMIT_KEY

Session = collections.namedtuple('Session', 'id user created used groups',
                                 defaults=((),))
_MAX_GROUPS = 256


@dataclasses.dataclass(frozen=True)
class Settings:
    namespace: str
    timeout: int = DEFAULT_TIMEOUT
    limit: int = DEFAULT_LIMIT
    lockout_policy: lockout.Policy = lockout.Policy()
    throttle_policy: throttle.Policy = throttle.Policy()
    trusted_proxies: tuple = ()


def _whole(app_config, key, default):
    value = app_config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise config.ConfigError('%s must be a whole number >= 1, not %r'
                                 % (key, value))
    return value


def settings(app_config, namespaces):
    """The :class:`Settings` of the sessions from the emulator config.

    The namespace defaults to the first served one (``default`` when all
    are served).

    :raises sushy_kubevirt.config.ConfigError: naming the key.
    """
    timeout = app_config.get(TIMEOUT_KEY, DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or \
            timeout < 1:
        raise config.ConfigError('%s must be a whole number of seconds '
                                 '>= 1, not %r' % (TIMEOUT_KEY, timeout))
    namespace = app_config.get(NAMESPACE_KEY) or (
        namespaces[0] if namespaces else 'default')
    return Settings(namespace, timeout,
                    _whole(app_config, LIMIT_KEY, DEFAULT_LIMIT),
                    lockout.policy(app_config), throttle.policy(app_config),
                    clients.trusted(app_config))


def _digest(token):
    return hashlib.sha256(token.encode('utf-8')).hexdigest()


def owner(user):
    """The :data:`OWNER` label value of ``user``'s sessions."""
    return hashlib.sha256(user.encode('utf-8', 'surrogatepass')
                          ).hexdigest()[:40]


def _time(value):
    if not isinstance(value, str) or not _TIME.match(value):
        raise ValueError(('not a time: %r' % (value,))[:60])
    result = int(value)
    if result >= _MAX_TIME:
        raise ValueError('time out of range')
    return result


def _parse(secret):
    """The Session of a well-formed session Secret. :raises ValueError:"""
    meta = secret.get('metadata') or {}
    name = meta.get('name') or ''
    labels = meta.get('labels') or {}
    notes = meta.get('annotations') or {}
    if not name.startswith(PREFIX) or not _ID.match(name[len(PREFIX):]):
        raise ValueError('not named %s<16 hex digits>' % PREFIX)
    user = notes.get(USER)
    if not isinstance(user, str) or not user or len(user) > _MAX_USER:
        raise ValueError('no valid %s annotation' % USER)
    if labels.get(LABEL) != 'true' or labels.get(OWNER) != owner(user):
        raise ValueError('labels do not match the user')
    digest = (secret.get('data') or {}).get(DIGEST)
    try:
        digest = base64.b64decode(digest, validate=True).decode()
    except (TypeError, ValueError):
        digest = None
    if not digest or not _HEX64.match(digest):
        raise ValueError('no valid %s' % DIGEST)
    return Session(name[len(PREFIX):], user, _time(notes.get(CREATED)),
                   _time(notes.get(USED)), _groups(notes.get(GROUPS))), \
        digest


def _groups(value):
    if value is None:
        return ()
    groups = json.loads(value)
    if not isinstance(groups, list) or len(groups) > _MAX_GROUPS or not all(
            isinstance(g, str) and 0 < len(g) <= _MAX_USER for g in groups):
        raise ValueError('no valid %s annotation' % GROUPS)
    return tuple(groups)


class Store:
    """Sessions as Secrets of ``namespace`` in ``cluster``.

    :param policy: :class:`Settings` (namespace, timeout, limit and the
        authentication policies).
    """

    def __init__(self, cluster, policy, clock=time.time):
        self.cluster = cluster
        self.policy = policy
        self.namespace = policy.namespace
        self.timeouts = sessiontimeout.SessionTimeout(
            cluster, policy.namespace, policy.timeout)
        self.lockout = lockout.Lockout(cluster, policy.namespace,
                                       policy.lockout_policy, clock=clock)
        self.throttle = throttle.Throttle(policy.throttle_policy)
        self._clock = clock
        self._lock = threading.Lock()
        self._key = None
        self._gone = collections.OrderedDict()
        self._logged = collections.OrderedDict()

    @property
    def timeout(self):
        """The SessionTimeout in force (:mod:`.sessiontimeout`)."""
        return self.timeouts.current()

    # sessions

    def _expired(self, session, now):
        return now - session.used > self.timeout

    # the shared HMAC key

    def _hmac_key(self):
        if self._key is not None:
            return self._key
        for _ in range(3):
            secret = self.cluster.get_secret(self.namespace, KEY_NAME)
            if secret is None:
                try:
                    secret = self.cluster.create_secret(self.namespace, {
                        'apiVersion': 'v1', 'kind': 'Secret',
                        'type': 'Opaque', 'metadata': {'name': KEY_NAME},
                        'data': {KEY_DATA: base64.b64encode(
                            secrets.token_bytes(32)).decode()}})
                except apierrors.Conflict:
                    continue   # another process made it first: read it
            try:
                key = base64.b64decode((secret.get('data') or {})[KEY_DATA])
            except (KeyError, TypeError, ValueError):
                key = b''
            if len(key) < 16:
                raise apierrors.Invalid('Secret %s/%s holds no session key'
                                        % (self.namespace, KEY_NAME))
            self._key = key
            return key
        raise apierrors.Conflict('the session key keeps changing')

    def _tag(self, key, body):
        mac = hmac.new(key, body.encode(), hashlib.sha256).digest()[:18]
        return base64.urlsafe_b64encode(mac).decode()

    # bounded per-process memories

    def _remember(self, memory, item):
        with self._lock:
            memory.pop(item, None)
            memory[item] = True
            while len(memory) > GONE:
                memory.popitem(last=False)

    def _session(self, secret):
        """The (Session, digest) of ``secret``, else None (logged once)."""
        try:
            return _parse(secret)
        except ValueError as exc:
            meta = secret.get('metadata') or {}
            seen = (meta.get('name'), meta.get('resourceVersion'))
            if seen not in self._logged:
                self._remember(self._logged, seen)
                LOG.warning('Secret %s/%s has the label %s but is not a '
                            'well-formed session (%s): ignored',
                            self.namespace, str(seen[0])[:253], LABEL, exc)
            return None

    # sessions

    def create(self, user, groups=()):
        """A new session of ``user`` (of ``groups``): ``(Session, token)``.

        :raises messages.RedfishError: SessionLimitExceeded (503).
        """
        if self.count(self.policy.limit) >= self.policy.limit:
            LOG.warning('Login refused: %d sessions exist, the limit '
                        '(%s)', self.policy.limit, LIMIT_KEY)
            raise messages.RedfishError(
                'SessionLimitExceeded', code=503, detail='%d sessions '
                'exist, the most this service allows; log out of one '
                'first' % self.policy.limit)
        key = self._hmac_key()
        sid = secrets.token_hex(8)
        body = '%s.%s' % (sid, secrets.token_urlsafe(32))
        token = '%s.%s' % (body, self._tag(key, body))
        now = int(self._clock())
        digest = base64.b64encode(_digest(token).encode()).decode()
        notes = {USER: user, CREATED: str(now), USED: str(now)}
        if groups:
            notes[GROUPS] = json.dumps(list(groups))
        self.cluster.create_secret(self.namespace, {
            'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
            'metadata': {
                'name': PREFIX + sid,
                'labels': {LABEL: 'true', OWNER: owner(user)},
                'annotations': notes},
            'data': {DIGEST: digest}})
        return Session(sid, user, now, now, tuple(groups)), token

    def _cache(self):
        """This process's watch cache of the session Secrets (synced)."""
        return labelwatch.shared(self.cluster, self.namespace,
                                 LABEL).synced()[1]

    def _parsed(self, secret):
        """``(Session, digest, secret)``; None for no or a bad Secret."""
        parsed = secret and self._session(secret)
        return parsed + (secret,) if parsed else None

    def _read(self, sid):
        """``(Session, digest, secret)`` of live session ``sid``, else Nones.

        Read from the watch cache; a live GET decides when the cache has
        no such session or finds it expired.
        """
        if not _ID.match(sid or '') or sid in self._gone:
            return None, None, None
        name = PREFIX + sid
        found = self._parsed(self._cache().get(self.namespace, name))
        if found is None or self._expired(found[0], self._clock()):
            found = self._parsed(self.cluster.get_secret(self.namespace,
                                                         name))
        if found is None:
            self._remember(self._gone, sid)
            return None, None, None
        if self._expired(found[0], self._clock()):
            self.delete(sid)
            return None, None, None
        return found

    def authenticate(self, token):
        """The live Session ``token`` belongs to, else None.

        A token whose tag is wrong costs no API call, and so does one of
        a session the watch cache holds unexpired (but for the write of
        its last use, at most once per tenth of the timeout).
        """
        if not isinstance(token, str) or len(token) > _MAX_TOKEN:
            return None
        body, _, tag = token.rpartition('.')
        sid = body.partition('.')[0]
        if not _ID.match(sid) or sid in self._gone:
            return None
        if not hmac.compare_digest(tag.encode('utf-8', 'replace'),
                                   self._tag(self._hmac_key(), body).encode()):
            return None
        session, stored, secret = self._read(sid)
        if session is None or not hmac.compare_digest(stored,
                                                      _digest(token)):
            return None
        self._touch(session, secret)
        return session

    def _touch(self, session, secret):
        now = int(self._clock())
        if now - session.used < max(1, self.timeout // 10):
            return
        version = secret['metadata'].get('resourceVersion')
        try:
            self.cluster.patch_secret(self.namespace, PREFIX + session.id, [
                {'op': 'test', 'path': '/metadata/resourceVersion',
                 'value': version},
                {'op': 'replace',
                 'path': sessiontimeout.annotation_path(USED),
                 'value': str(now)}])
        except (apierrors.Conflict, apierrors.NotFound):
            pass   # another request refreshed it, or a logout won

    def get(self, sid, user=None):
        """The live Session ``sid`` (of ``user`` when given), else None."""
        session = self._read(sid)[0]
        if session is None or (user is not None and session.user != user):
            return None
        return session

    def _pages(self, selector):
        """The session Secrets with ``selector``, a page at a time."""
        token = None
        for _ in range(_MAX_PAGES):
            items, token = self.cluster.list_secrets_page(
                self.namespace, selector, _PAGE, token)
            yield items
            if not token:
                return
        LOG.warning('Listed %d pages of sessions; stopped there',
                    _MAX_PAGES)

    def _live(self, selector, stop=None):
        """The live sessions with ``selector``; expired ones are deleted.

        Stops once ``stop`` sessions are found.
        """
        now = self._clock()
        result = []
        for page in self._pages(selector):
            for secret in page:
                parsed = self._session(secret)
                if parsed is None:
                    continue
                if self._expired(parsed[0], now):
                    self.delete(parsed[0].id)
                else:
                    result.append(parsed[0])
            if stop is not None and len(result) >= stop:
                break
        return result

    def count(self, stop):
        """How many live sessions there are, counting at most to ``stop``."""
        return len(self._live('%s=true' % LABEL, stop))

    def list(self, user=None):
        """The live sessions (of ``user`` when given), oldest first."""
        selector = '%s=true' % LABEL
        if user is not None:
            selector += ',%s=%s' % (OWNER, owner(user))
        return sorted(self._live(selector), key=lambda s: (s.created, s.id))

    def delete(self, sid):
        """End session ``sid``; False when there was none.

        This process refuses it at once: its id is remembered as gone.
        """
        if not _ID.match(sid or ''):
            return False
        try:
            self.cluster.delete_secret(self.namespace, PREFIX + sid)
        except apierrors.NotFound:
            self._remember(self._gone, sid)
            return False
        self._remember(self._gone, sid)
        return True
