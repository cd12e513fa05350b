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

"""Kubernetes API errors as a small exception hierarchy.

Built from an HTTP status and body (``from_response``), from a watch
``ERROR`` event's ``Status`` (``from_status``) or from the official client's
``ApiException`` (``from_exception``).
"""

import json
import re


class ApiError(Exception):
    """A Kubernetes API call failed; ``status`` is the HTTP code.

    ``verb``, ``resource`` (a :class:`~sushy_kubevirt.kube.resources.
    Resource`), ``subresource`` and ``namespace`` say what was asked, once
    :meth:`about` was called by the sender.
    """

    def __init__(self, message, status=None, reason=None, details=None,
                 retry_after=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.details = details or {}
        self.retry_after = retry_after
        self.verb = self.resource = self.subresource = None
        self.namespace = None

    def about(self, verb, resource, namespace=None, subresource=None):
        """Record the request that failed; return ``self``."""
        self.verb, self.resource = verb, resource
        self.namespace, self.subresource = namespace, subresource
        return self

    def permission(self):
        """The RBAC permission the request needed, as a phrase, or None.

        E.g. ``list virtualmachines.kubevirt.io in namespace ns-1``: the
        verb, the resource (``plural[/subresource].group``) and where.
        """
        if self.verb is None or self.resource is None:
            return None
        name = self.resource.plural
        if self.subresource:
            name += '/' + self.subresource
        if self.resource.group:
            name += '.' + self.resource.group
        where = ('in namespace %s' % self.namespace if self.namespace
                 else 'in all namespaces' if self.resource.namespaced
                 else 'at the cluster scope')
        return '%s %s %s' % (self.verb, name, where)


class Unavailable(ApiError):
    """The API server could not be reached (refused, dropped, timed out).

    ``server`` is its address and ``detail`` the request and the
    transport's error (for logs; never shown to Redfish clients).
    """

    def __init__(self, message, server=None, detail=None, **kwargs):
        super().__init__(message, **kwargs)
        self.server = server
        self.detail = detail or message


class Unreadable(ApiError):
    """The cache cannot answer reads of a namespace; ``cause`` says why.

    The API server refuses the informer's list or watch (403, ``cause``
    the :class:`Forbidden`), or the namespace does not exist (``cause``
    the :class:`NotFound` of the namespace). Not an answer of the API
    server: raised by the cache instead of serving a frozen or empty
    copy. Reads recover by themselves once the cause is fixed.
    """

    def __init__(self, message, cause, namespace=None):
        super().__init__(message, status=503)
        self.cause = cause
        self.namespace = namespace


class NotFound(ApiError):
    """HTTP 404.

    ``unserved`` is True when the server sent no Status: the URL is not
    served at all. kube-apiserver answers a path of no registered API (an
    aggregated group whose APIService is absent, such as KubeVirt's
    ``subresources.kubevirt.io`` without virt-api) with the plain text
    ``404 page not found``; a missing object gets a NotFound Status.
    """

    unserved = False


class Conflict(ApiError):
    """HTTP 409, or a JSON-patch ``test`` operation that failed (422)."""


class Forbidden(ApiError):
    """HTTP 403."""


class Gone(ApiError):
    """HTTP 410: the resourceVersion asked for has been compacted."""


class Invalid(ApiError):
    """HTTP 422: the request was rejected by validation or admission."""


class AuthorizerStarting(ApiError):
    """A 403 of a kube-apiserver whose RBAC authorizer is not ready.

    For a few seconds after it starts, kube-apiserver's RBAC authorizer has
    not listed the roles yet and refuses every request, naming each bound
    ClusterRole "not found" - the bootstrap ``system:discovery`` and
    ``system:basic-user`` too, which always exist. A revoked permission
    names none of them; this is the server starting, so it is retried
    and served from the cache as an outage is, never taken for a
    revocation.
    """


class TooManyRequests(ApiError):
    """HTTP 429; ``retry_after`` holds the server's advice in seconds."""


_BY_STATUS = {403: Forbidden, 404: NotFound, 409: Conflict, 410: Gone,
              422: Invalid, 429: TooManyRequests}


#: kube-apiserver's whole answer when a JSON patch does not apply (a
#: failed ``test`` included): the library's text is dropped.
PATCH_NOT_APPLICABLE = ('the server rejected our request due to an error '
                        'in our request')


#: The bootstrap ClusterRoles every authenticated user is bound to.
_STARTING = re.compile(r'clusterrole\.rbac\.authorization\.k8s\.io '
                       r'"system:(discovery|basic-user|public-info-viewer)" '
                       r'not found')


def _is_failed_test(status, message):
    return status == 422 and 'test failed' in message.lower()


def patch_not_applicable(exc):
    """Whether ``exc`` is the answer to a JSON patch that did not apply."""
    return (isinstance(exc, Conflict) and exc.status == 422) or (
        isinstance(exc, Invalid) and exc.message == PATCH_NOT_APPLICABLE
        and not exc.details.get('causes'))


#: ``metav1.CauseTypeResourceVersionTooLarge``.
TOO_LARGE_CAUSE = 'ResourceVersionTooLarge'


def too_large(exc):
    """Whether ``exc`` says the resourceVersion asked for is in the future.

    kube-apiserver answers 504 Timeout with the cause
    ``ResourceVersionTooLarge``; servers before 1.18.6 only said "Too large
    resource version" in the message (as client-go checks).
    """
    if not isinstance(exc, ApiError) or exc.status != 504:
        return False
    causes = exc.details.get('causes') or ()
    return any(c.get('reason') == TOO_LARGE_CAUSE or
               c.get('message') == 'Too large resource version'
               for c in causes) or \
        'too large resource version' in (exc.message or '').lower()


def _retry_after(headers, details):
    value = (headers or {}).get('Retry-After')
    if value is None:
        value = details.get('retryAfterSeconds')
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def from_status(status_obj, headers=None, http_status=None):
    """Build an error from a kube ``Status`` dict."""
    code = status_obj.get('code') or http_status or 500
    message = status_obj.get('message') or ('HTTP %s' % code)
    details = status_obj.get('details') or {}
    if _is_failed_test(code, message):
        cls = Conflict
    elif code == 403 and _STARTING.search(message):
        cls = AuthorizerStarting
    else:
        cls = _BY_STATUS.get(code, ApiError)
    return cls(message, status=code, reason=status_obj.get('reason'),
               details=details,
               retry_after=_retry_after(headers, details))


def from_response(status, body, headers=None):
    """Build an error from an HTTP status, raw body and headers."""
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get('kind') == 'Status':
        return from_status(parsed, headers=headers, http_status=status)
    text = (body or '').strip() or 'HTTP %s' % status
    exc = from_status({'code': status, 'message': text}, headers=headers,
                      http_status=status)
    exc.unserved = isinstance(exc, NotFound)
    return exc


def from_exception(exc):
    """Convert the official client's ``ApiException``."""
    if not exc.status:
        return Unavailable(str(exc.reason or exc), reason=exc.reason)
    return from_response(exc.status, exc.body, exc.headers)
