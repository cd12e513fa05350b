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

"""The SessionService's SessionTimeout, set through Redfish, for everyone.

The configured timeout holds until one is set (``PATCH
/redfish/v1/SessionService``): that one is kept in the Secret
:data:`SERVICE_NAME` of the sessions' namespace (annotation
:data:`TIMEOUT`, label :data:`SERVICE_LABEL`), which every process reads
from its own watch cache (:mod:`.labelwatch`): a read costs no API call,
a write one (the Secret's create, then patches guarded by its
resourceVersion).
"""

from sushy_kubevirt.accounts import labelwatch
from sushy_kubevirt.kube import apierrors

SERVICE_NAME = 'sushy-session-service'
SERVICE_LABEL = 'sushy-kubevirt.io/session-service'
TIMEOUT = 'sushy-kubevirt.io/session-timeout'
#: SessionService.SessionTimeout's range (its schema's), in seconds.
MIN_TIMEOUT, MAX_TIMEOUT = 30, 86400
#: Attempts of a write that keeps conflicting.
WRITE_ATTEMPTS = 5


def annotation_path(key):
    """The JSON-patch path of annotation ``key``."""
    return '/metadata/annotations/' + key.replace('~', '~0').replace(
        '/', '~1')


def stored(secret):
    """The timeout ``secret`` keeps, else None."""
    value = ((secret or {}).get('metadata', {}).get('annotations')
             or {}).get(TIMEOUT)
    if isinstance(value, str) and value.isdigit() and \
            MIN_TIMEOUT <= int(value) <= MAX_TIMEOUT:
        return int(value)
    return None


class SessionTimeout:
    """The timeout of ``namespace``'s sessions; ``configured`` by default."""

    def __init__(self, cluster, namespace, configured):
        self.cluster = cluster
        self.namespace = namespace
        self.configured = configured

    def _cache(self):
        """This process's watch cache of the Secret (synced)."""
        return labelwatch.shared(self.cluster, self.namespace,
                                 SERVICE_LABEL).synced()[1]

    def current(self):
        """The timeout in force: the one set, else the configured one.

        The configured one while the Secret cannot be read.
        """
        try:
            secret = self._cache().get(self.namespace, SERVICE_NAME)
        except apierrors.Unavailable:
            return self.configured
        return stored(secret) or self.configured

    def set(self, seconds, check=None):
        """Keep ``seconds`` for every process (and every session).

        ``check(timeout)`` is called with the timeout in force before
        each attempt, to refuse the write (a stale If-Match). A conflict
        reads the Secret live and tries again.

        :raises apierrors.Conflict: it kept changing.
        """
        cache = self._cache()
        secret = cache.get(self.namespace, SERVICE_NAME)
        for _ in range(WRITE_ATTEMPTS):
            if check is not None:
                check(stored(secret) or self.configured)
            try:
                made = self._write(secret, seconds)
            except apierrors.Conflict:
                secret = self.cluster.get_secret(self.namespace,
                                                 SERVICE_NAME)
                continue
            cache.note_write(made)
            return
        raise apierrors.Conflict('the SessionService keeps changing')

    def _write(self, secret, seconds):
        if secret is None:
            return self.cluster.create_secret(self.namespace, {
                'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
                'metadata': {'name': SERVICE_NAME,
                             'labels': {SERVICE_LABEL: 'true'},
                             'annotations': {TIMEOUT: str(seconds)}}})
        meta = secret['metadata']
        ops = [{'op': 'test', 'path': '/metadata/resourceVersion',
                'value': meta.get('resourceVersion')}]
        if not meta.get('annotations'):
            ops.append({'op': 'add', 'path': '/metadata/annotations',
                        'value': {}})
        ops.append({'op': 'add', 'path': annotation_path(TIMEOUT),
                    'value': str(seconds)})
        return self.cluster.patch_secret(self.namespace, SERVICE_NAME, ops)
