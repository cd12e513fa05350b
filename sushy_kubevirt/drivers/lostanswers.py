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

"""Writes whose answer was lost: were they applied?

The API server may apply a create or a patch whose answer never arrives:
the connection is cut (a restart, a proxy), or a timeout answers 5xx
while the write goes on. After such an error, and only then, the object
is read back, for :data:`WAIT` seconds at most (the server may be
restarting): an InsertMedia knows the objects it made by its token
(:data:`sushy_kubevirt.kubevirt.media.ANNOTATION_INSERT`), and its
attach by the VM read back.
"""

import time

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import backoff
from sushy_kubevirt.kubevirt import media

#: Seconds a read back is retried at most.
WAIT = 5.0


def unknown(exc):
    """True when the write that raised ``exc`` may have been applied.

    The server was not reached or answered 5xx; not a refusal (4xx), nor
    a namespace the cache cannot read.
    """
    if isinstance(exc, apierrors.Unreadable):
        return False
    return isinstance(exc, apierrors.Unavailable) or (exc.status or 0) >= 500


def read_back(read, wait=WAIT):
    """``read()``, retried while the server cannot answer, for ``wait`` s.

    :raises apierrors.ApiError: a refusal, or the last error past ``wait``.
    """
    delays = backoff.Backoff(initial=0.1, cap=1.0)
    deadline = time.monotonic() + wait
    while True:
        try:
            return read()
        except apierrors.ApiError as exc:
            retry = unknown(exc) or isinstance(exc,
                                               apierrors.TooManyRequests)
            delay = delays.next()
            if not retry or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)


def create(create_fn, get_fn, namespace, body, token):
    """``create_fn(namespace, body)``; after a lost answer, what it made.

    ``get_fn(namespace, name)`` reads the object (None when absent). The
    object found is returned when it carries ``token``; otherwise the
    create's error is raised (it was not applied, or not by this request).
    """
    try:
        return create_fn(namespace, body)
    except apierrors.ApiError as exc:
        if not unknown(exc):
            raise
        error = exc
    name = body['metadata']['name']
    try:
        found = read_back(lambda: get_fn(namespace, name))
    except apierrors.ApiError:
        raise error from None
    if found is None or not media.made_by(found, token):
        raise error
    return found
