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

"""Who a bearer token is, and what they may do: TokenReview and
SubjectAccessReview, with their answers kept for a short time.

:meth:`Reviews.authenticate` asks the API server who a token is
(``authentication.k8s.io/v1`` TokenReview); :meth:`Reviews.allowed` asks
whether an identity may do one thing (``authorization.k8s.io/v1``
SubjectAccessReview), as kube-apiserver's own authorizer would decide
its request. Each answer is reused for ``ttl`` seconds (a bounded
``cachetools.TTLCache`` per kind), so a changed RoleBinding or a revoked
token takes effect within ``ttl``. A failed review (the API server away,
the emulator's account not allowed to review) refuses; it is never
cached.
"""

import collections
import hashlib
import threading

import cachetools

from sushy_kubevirt.kube import resources

TOKEN_REVIEWS = resources.Resource('authentication.k8s.io', 'v1',
                                   'tokenreviews', namespaced=False)
ACCESS_REVIEWS = resources.Resource('authorization.k8s.io', 'v1',
                                    'subjectaccessreviews',
                                    namespaced=False)
#: Answers kept per kind.
SIZE = 4096

#: A Kubernetes user as TokenReview names it (hashable).
Identity = collections.namedtuple('Identity', 'user groups uid',
                                  defaults=((), ''))


class Reviews:
    """TokenReviews and SubjectAccessReviews of one cluster.

    :param cluster: a :class:`~sushy_kubevirt.kube.cluster.Cluster`.
    :param ttl: seconds an answer is reused; 0: every question is asked.
    """

    def __init__(self, cluster, ttl):
        self.cluster = cluster
        self.ttl = ttl
        self._lock = threading.Lock()
        self._tokens = cachetools.TTLCache(SIZE, ttl or 1e-9)
        self._access = cachetools.TTLCache(SIZE, ttl or 1e-9)

    def _cached(self, cache, key, ask):
        with self._lock:
            if key in cache:
                return cache[key]
        answer = ask()
        if self.ttl:
            with self._lock:
                cache[key] = answer
        return answer

    @staticmethod
    def _token_key(token):
        return hashlib.sha256(token.encode('utf-8', 'surrogatepass')).digest()

    def authenticate(self, token):
        """The Identity of ``token``, or None when it is not valid.

        :raises apierrors.ApiError: the review could not be made.
        """
        return self._cached(self._tokens, self._token_key(token),
                            lambda: self._token(token))

    def known(self, token):
        """Whether a review of ``token`` said lately that it is valid."""
        with self._lock:
            return self._tokens.get(self._token_key(token)) is not None

    def _token(self, token):
        review = self.cluster.create_object(TOKEN_REVIEWS, None, {
            'apiVersion': TOKEN_REVIEWS.api_version, 'kind': 'TokenReview',
            'spec': {'token': token}})
        status = review.get('status') or {}
        user = status.get('user') or {}
        if not status.get('authenticated') or not user.get('username'):
            return None
        return Identity(user['username'], tuple(user.get('groups') or ()),
                        user.get('uid') or '')

    def allowed(self, identity, resource=None, path=None, verb='get'):
        """Whether ``identity`` may do it: a resource or a non-resource URL.

        :param resource: ``resourceAttributes`` (namespace, verb, group,
            resource, subresource, name).
        :param path: a non-resource URL, with ``verb``.
        :raises apierrors.ApiError: the review could not be made.
        """
        if resource is not None:
            key = (identity, tuple(sorted(resource.items())))
            spec = {'resourceAttributes': dict(resource)}
        else:
            key = (identity, path, verb)
            spec = {'nonResourceAttributes': {'path': path, 'verb': verb}}
        spec.update(user=identity.user, groups=list(identity.groups))
        if identity.uid:
            spec['uid'] = identity.uid
        return self._cached(self._access, key, lambda: bool(
            (self.cluster.create_object(ACCESS_REVIEWS, None, {
                'apiVersion': ACCESS_REVIEWS.api_version,
                'kind': 'SubjectAccessReview', 'spec': spec,
            }).get('status') or {}).get('allowed')))
