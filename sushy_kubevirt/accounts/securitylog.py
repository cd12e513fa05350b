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
"""The security log: logins, refused logins, lockouts, refused privileges.

Each record is a core Kubernetes Event in the sessions' namespace,
labelled :data:`~sushy_kubevirt.kubevirt.logentries.LABEL` and about the
fixed object :data:`INVOLVED_NAME`: one per reason, account and window of
ten minutes, counting its occurrences (:func:`note`, written as
:mod:`.recorder` tells). Every process reads them from its own watch of
those labelled Events, so every worker serves the same log, and the API
server's Event TTL (one hour by default) bounds it. A record that cannot
be written is logged and counted: it never fails the request.
"""

import datetime
import logging
import os
import socket

from sushy_kubevirt.accounts import labelwatch
from sushy_kubevirt.accounts import recorder
from sushy_kubevirt.kube import resources
from sushy_kubevirt.kubevirt import logentries

LOG = logging.getLogger(__name__)
#: The object the records are about (it need not exist).
INVOLVED_NAME = 'sushy-kubevirt-security-log'


def involved(namespace):
    return {'apiVersion': 'v1', 'kind': 'Secret', 'name': INVOLVED_NAME,
            'namespace': namespace}


def _instance():
    return '%s/%d' % (socket.gethostname(), os.getpid())


class SecurityLog:
    """The records of ``namespace``, read from this process's watch."""

    def __init__(self, cluster, namespace):
        self.cluster = cluster
        self.namespace = namespace

    def _watch(self):
        return labelwatch.shared(self.cluster, self.namespace,
                                 logentries.LABEL, resources.EVENT,
                                 logentries.slim)

    def events(self, wait=labelwatch.SYNC_WAIT):
        """Every cached record (no API call once synced).

        :raises apierrors.Unavailable: not synced within ``wait`` seconds,
            or the server refuses the list or watch.
        """
        return self._watch().synced(wait)[1].list()

    def write(self, reason, text):
        """POST a record of its own (a ClearLog's marker), not counted.

        Overlaid on this process's cache.

        :raises apierrors.ApiError: it could not be written.
        """
        live, cache = self._watch().started()
        body = logentries.record(
            self.namespace, involved(self.namespace), reason, text,
            datetime.datetime.now(datetime.timezone.utc),
            instance=_instance(), labels={logentries.LABEL: 'true'})
        cache.note_write(live.create(resources.EVENT, self.namespace, body))

    def recorder(self):
        """This process's :class:`~.recorder.Recorder` of the records."""
        return recorder.shared(self._watch(), self.namespace,
                               involved(self.namespace), _instance())


def shared(cluster, namespace):
    """The SecurityLog of ``namespace`` (its watch: one per process)."""
    return SecurityLog(cluster, namespace)


def note(cluster, namespace, reason, text, account=None, client=None):
    """Count ``reason`` (a key of :data:`logentries.SECURITY`); never raises.

    :param text: the message, if it is the first of its record.
    :param account: the account it is about; None: a user name that is
        no account, or none.
    :param client: the client's address (or what a trusted proxy named).

    ``cluster`` None (no Kubernetes behind the emulator) records nothing.
    """
    if cluster is None:
        return
    try:
        shared(cluster, namespace).recorder().note(reason, text, account,
                                                   client)
    except Exception as exc:   # a record never fails the request
        LOG.warning('Cannot write the security log record %s: %s', reason,
                    exc)
