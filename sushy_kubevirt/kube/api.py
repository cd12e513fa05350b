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

"""Live Kubernetes API calls: rate-limited, counted, errors translated.

Every call returns plain dicts (or the raw streaming response for watches)
and raises :mod:`sushy_kubevirt.kube.apierrors` exceptions. A call other
than a list or a watch answered 429 is sent again after its Retry-After
(bounded).
"""

import json
import time

from kubernetes.client import exceptions as k8s_exceptions
import urllib3

from sushy_kubevirt.kube import apierrors

JSON = 'application/json'
#: As client-go asks: virt-api's start, stop and restart routes declare no
#: representation, and go-restful answers 406 to an Accept that names
#: only JSON (kubevirt/kubevirt, pkg/virt-api/api.go, v1.9.0).
ACCEPT = 'application/json, */*'
JSON_PATCH = 'application/json-patch+json'
#: Seconds to wait for a TCP connection and for each response read.
DEFAULT_TIMEOUT = (10.0, 60.0)
#: A call answered 429 (API Priority and Fairness rejected it, unexecuted)
#: is sent again after the server's Retry-After (1 s when absent): at most
#: this many attempts, waiting at most ``THROTTLED_WAIT`` seconds in all.
#: Lists and watches are left to the reflector's own backoff.
THROTTLED_ATTEMPTS = 3
THROTTLED_WAIT = 10.0


class Api:
    """Thin layer over the official client's transport (``ApiClient``)."""

    def __init__(self, api_client, limiter, accounting,
                 timeout=DEFAULT_TIMEOUT):
        self.api_client = api_client
        self.limiter = limiter
        self.accounting = accounting
        self.timeout = timeout

    def close(self):
        """Close every pooled connection now.

        urllib3 2 closes a pool's idle connections only when the pool is
        garbage-collected (``PoolManager.clear()`` just forgets its pools),
        so a pool kept alive by a reference cycle or a logged traceback
        would keep its keep-alive connections open.
        """
        manager = self.api_client.rest_client.pool_manager
        pools = [manager.pools.get(key) for key in manager.pools.keys()]
        self.api_client.close()
        for pool in pools:
            if pool is not None:
                pool.close()

    @property
    def server(self):
        """The API server's address (for logs, never for Redfish bodies)."""
        return self.api_client.configuration.host

    def _send(self, what, method, path, query=None, body=None,
              content_type=None, timeout=None):
        """Send one request; errors raised record ``what``.

        ``what`` is ``(verb, resource, namespace, subresource)``.
        """
        verb, resource, _, subresource = what
        waited = self.limiter.acquire()
        if waited:
            self.accounting.throttled(waited)
        self.accounting.live(verb, resource.plural + (
            '/' + subresource if subresource else ''))
        headers = {'Accept': ACCEPT}
        if body is not None:
            headers['Content-Type'] = content_type or JSON
        method, url, headers, body, _ = self.api_client.param_serialize(
            method=method, resource_path=path,
            query_params=[(k, v) for k, v in (query or {}).items()
                          if v is not None],
            header_params=headers, body=body, auth_settings=['BearerToken'])
        try:
            response = self.api_client.call_api(
                method, url, header_params=headers, body=body,
                _request_timeout=timeout or self.timeout)
        except k8s_exceptions.ApiException as exc:
            raise apierrors.from_exception(exc).about(*what) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            detail = '%s %s: %s' % (method, path,
                                    getattr(exc, 'reason', None) or exc)
            raise apierrors.Unavailable(
                'cannot reach the Kubernetes API server at %s: %s'
                % (self.server, detail), server=self.server,
                detail=detail).about(*what) from exc
        return response

    def _call_once(self, what, method, path, **kwargs):
        """Send; raise the translated error of a non-2xx answer."""
        response = self._send(what, method, path, **kwargs)
        data = response.read()
        if not 200 <= response.status <= 299:
            raise apierrors.from_response(response.status, data,
                                          response.headers).about(*what)
        return json.loads(data) if data else None

    def _call(self, what, method, path, **kwargs):
        """:meth:`_call_once`, sent again while throttled (429), bounded."""
        waited = 0.0
        for attempt in range(1, THROTTLED_ATTEMPTS + 1):
            try:
                return self._call_once(what, method, path, **kwargs)
            except apierrors.TooManyRequests as exc:
                delay = 1.0 if exc.retry_after is None else \
                    max(0.0, float(exc.retry_after))
                if attempt == THROTTLED_ATTEMPTS or \
                        waited + delay > THROTTLED_WAIT:
                    raise
            time.sleep(delay)
            waited += delay

    def list(self, resource, namespace=None, label_selector=None,
             resource_version=None, limit=None, continue_token=None,
             field_selector=None):
        """One page of a list, as a dict with ``items`` and ``metadata``."""
        query = {'labelSelector': label_selector,
                 'fieldSelector': field_selector,
                 'resourceVersion': resource_version,
                 'limit': limit, 'continue': continue_token}
        return self._call_once(('list', resource, namespace, None), 'GET',
                               resource.path(namespace), query=query)

    def watch(self, resource, namespace=None, label_selector=None,
              resource_version=None, timeout_seconds=None,
              read_timeout=None):
        """Open a watch; return the raw urllib3 response (caller closes).

        Bookmarks are always requested; ``read_timeout`` bounds the silence
        between two chunks (a client-side stall detector).
        """
        query = {'watch': 'true', 'allowWatchBookmarks': 'true',
                 'labelSelector': label_selector,
                 'resourceVersion': resource_version,
                 'timeoutSeconds': timeout_seconds}
        timeout = (self.timeout[0], read_timeout or self.timeout[1])
        what = ('watch', resource, namespace, None)
        response = self._send(what, 'GET', resource.path(namespace),
                              query=query, timeout=timeout)
        if not 200 <= response.status <= 299:
            data = response.read()
            raise apierrors.from_response(response.status, data,
                                          response.headers).about(*what)
        return response.response

    def get(self, resource, namespace, name):
        return self._call(('get', resource, namespace, None), 'GET',
                          resource.path(namespace, name))

    def create(self, resource, namespace, body):
        return self._call(('create', resource, namespace, None), 'POST',
                          resource.path(namespace), body=body)

    def replace(self, resource, namespace, name, body):
        """PUT ``body``; its ``metadata.resourceVersion`` guards it."""
        return self._call(('update', resource, namespace, None), 'PUT',
                          resource.path(namespace, name), body=body)

    def delete(self, resource, namespace, name, preconditions=None):
        """Delete; return the server's answer (the object or a Status).

        ``preconditions`` (``{'uid': ..., 'resourceVersion': ...}``): the
        server deletes only that object (else 409, :class:`Conflict`).
        """
        body = None if not preconditions else {
            'apiVersion': 'v1', 'kind': 'DeleteOptions',
            'preconditions': preconditions}
        return self._call(('delete', resource, namespace, None), 'DELETE',
                          resource.path(namespace, name), body=body)

    def patch(self, resource, namespace, name, operations):
        """Apply an RFC 6902 JSON patch (a non-empty list of operations).

        The body must be a list: the official client silently turns a
        JSON-patch request with any other body into a strategic merge patch.
        """
        if not isinstance(operations, list) or not operations:
            raise ValueError('a JSON patch is a non-empty list, got %r'
                             % (operations,))
        try:
            return self._call(('patch', resource, namespace, None),
                              'PATCH', resource.path(namespace, name),
                              body=operations, content_type=JSON_PATCH)
        except apierrors.Invalid as exc:
            # kube answers a failed ``test`` with a bare 422: with a leading
            # test that is (almost always) the object having changed.
            if operations[0].get('op') == 'test' and \
                    apierrors.patch_not_applicable(exc):
                raise apierrors.Conflict(
                    '%s (the JSON patch did not apply: a test failed or a '
                    'path is missing)' % exc.message, status=422,
                    reason=exc.reason).about(
                        'patch', resource, namespace) from exc
            raise

    def put_subresource(self, resource, namespace, name, action, body=None):
        """PUT ``.../{name}/{action}`` (e.g. subresources.kubevirt.io)."""
        return self._call(('update', resource, namespace, action), 'PUT',
                          resource.path(namespace, name, action),
                          body=body if body is not None else {})
