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
the login answered, and refuse it as soon as the logout answered. Signed
tokens would need a shared revocation list anyway, so the session itself
is the shared state: ``POST .../Sessions`` creates a Secret
``sushy-session-<id>`` (label :data:`LABEL`) holding the user, the times
and the SHA-256 of the token, never the token. A request with
``X-Auth-Token`` reads that Secret live (1 API GET), so a DELETE is seen
by every process at once; nothing about sessions is kept in memory.

``SessionTimeout`` is an inactivity timeout: a session unused for that
long is refused and deleted. Its last use is written back (one guarded
patch) at most once per tenth of the timeout, so a busy session costs a
write per few minutes, not one per request.
"""

import base64
import collections
import hashlib
import hmac
import re
import secrets
import time

from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors

LABEL = 'sushy-kubevirt.io/session'
USER = 'sushy-kubevirt.io/user'
CREATED = 'sushy-kubevirt.io/created'
USED = 'sushy-kubevirt.io/last-used'
PREFIX = 'sushy-session-'
DIGEST = 'token-sha256'
#: Redfish's SessionTimeout range is 30..86400 s; a config may go lower.
DEFAULT_TIMEOUT = 1800
_ID = re.compile(r'^[0-9a-f]{16}$')

TIMEOUT_KEY = config.SESSION_TIMEOUT_KEY
NAMESPACE_KEY = config.SESSION_NAMESPACE_KEY

Session = collections.namedtuple('Session', 'id user created used')


def settings(app_config, namespaces):
    """``(namespace, timeout)`` of the sessions from the emulator config.

    The namespace defaults to the first served one (``default`` when all
    are served).

    :raises ValueError: naming the key.
    """
    timeout = app_config.get(TIMEOUT_KEY, DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or \
            timeout < 1:
        raise ValueError('%s must be a whole number of seconds >= 1, not '
                         '%r' % (TIMEOUT_KEY, timeout))
    namespace = app_config.get(NAMESPACE_KEY) or (
        namespaces[0] if namespaces else 'default')
    return namespace, timeout


def _digest(token):
    return hashlib.sha256(token.encode('utf-8')).hexdigest()


def _annotation_path(key):
    return '/metadata/annotations/' + key.replace('~', '~0').replace(
        '/', '~1')


def _session(secret):
    meta = secret.get('metadata') or {}
    notes = meta.get('annotations') or {}
    try:
        return Session(meta['name'][len(PREFIX):], notes[USER],
                       int(notes[CREATED]), int(notes[USED]))
    except (KeyError, ValueError, TypeError):
        return None


class Store:
    """Sessions as Secrets of ``namespace`` in ``cluster``."""

    def __init__(self, cluster, namespace, timeout=DEFAULT_TIMEOUT,
                 clock=time.time):
        self.cluster = cluster
        self.namespace = namespace
        self.timeout = timeout
        self._clock = clock

    def _expired(self, session, now):
        return now - session.used > self.timeout

    def create(self, user):
        """A new session of ``user``: ``(Session, token)``.

        Expired sessions are deleted first (without an auth file no token
        is ever checked, so nothing else would remove them).
        """
        self.list()
        sid = secrets.token_hex(8)
        token = '%s.%s' % (sid, secrets.token_urlsafe(32))
        now = int(self._clock())
        digest = base64.b64encode(_digest(token).encode()).decode()
        self.cluster.create_secret(self.namespace, {
            'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
            'metadata': {
                'name': PREFIX + sid, 'labels': {LABEL: 'true'},
                'annotations': {USER: user, CREATED: str(now),
                                USED: str(now)}},
            'data': {DIGEST: digest}})
        return Session(sid, user, now, now), token

    def _read(self, sid):
        if not _ID.match(sid or ''):
            return None, None
        secret = self.cluster.get_secret(self.namespace, PREFIX + sid)
        if secret is None or (secret.get('metadata') or {}).get(
                'labels', {}).get(LABEL) != 'true':
            return None, None
        session = _session(secret)
        if session is None:
            return None, None
        if self._expired(session, self._clock()):
            self.delete(sid)
            return None, None
        return session, secret

    def authenticate(self, token):
        """The live Session ``token`` belongs to, else None."""
        sid = token.partition('.')[0] if isinstance(token, str) else ''
        session, secret = self._read(sid)
        if session is None:
            return None
        try:
            stored = base64.b64decode(secret['data'][DIGEST]).decode()
        except (KeyError, TypeError, ValueError):
            return None
        if not hmac.compare_digest(stored, _digest(token)):
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
                {'op': 'replace', 'path': _annotation_path(USED),
                 'value': str(now)}])
        except (apierrors.Conflict, apierrors.NotFound):
            pass   # another request refreshed it, or a logout won

    def get(self, sid):
        """The live Session ``sid``, else None."""
        return self._read(sid)[0]

    def list(self):
        """Every live session, oldest first; expired ones are deleted."""
        now = self._clock()
        result = []
        for secret in self.cluster.list_secrets(self.namespace,
                                                '%s=true' % LABEL):
            session = _session(secret)
            if session is None:
                continue
            if self._expired(session, now):
                self.delete(session.id)
            else:
                result.append(session)
        return sorted(result, key=lambda s: (s.created, s.id))

    def delete(self, sid):
        """End session ``sid``; False when there was none."""
        if not _ID.match(sid or ''):
            return False
        try:
            self.cluster.delete_secret(self.namespace, PREFIX + sid)
        except apierrors.NotFound:
            return False
        return True


def service(timeout, members_uri):
    """The SessionService resource."""
    return {
        '@odata.type': '#SessionService.v1_1_8.SessionService',
        '@odata.id': '/redfish/v1/SessionService',
        'Id': 'SessionService',
        'Name': 'Session Service',
        'ServiceEnabled': True,
        'SessionTimeout': timeout,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'Sessions': {'@odata.id': members_uri},
    }


def collection(sessions, members_uri):
    return {
        '@odata.type': '#SessionCollection.SessionCollection',
        '@odata.id': members_uri,
        'Name': 'Session Collection',
        'Members@odata.count': len(sessions),
        'Members': [{'@odata.id': '%s/%s' % (members_uri, s.id)}
                    for s in sessions],
    }


def resource(session, members_uri):
    return {
        '@odata.type': '#Session.v1_4_0.Session',
        '@odata.id': '%s/%s' % (members_uri, session.id),
        'Id': session.id,
        'Name': 'User Session',
        'UserName': session.user,
        'CreatedTime': time.strftime('%Y-%m-%dT%H:%M:%SZ',
                                     time.gmtime(session.created)),
        'SessionType': 'Redfish',
    }
