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

"""Accounts that are Kubernetes identities, decided by the cluster's RBAC.

With ``SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE = 'kubernetes'`` a Redfish
password (Basic, or a session login's) is a Kubernetes bearer token: the
API server says whose (:meth:`KubeAccounts.authenticate`, a TokenReview),
and what that identity may do is what its RBAC allows
(:class:`KubeAccount`, SubjectAccessReviews through
:class:`~sushy_kubevirt.kube.reviews.Reviews`). Every authenticated
identity holds Login and ConfigureSelf; the rest is asked per request.
"""

import dataclasses
import logging

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import reviews
from sushy_kubevirt.kubevirt import permissions

LOG = logging.getLogger(__name__)
#: What every authenticated identity may do.
GIVEN = (privileges.NO_AUTH, privileges.LOGIN, privileges.CONFIGURE_SELF)


@dataclasses.dataclass(frozen=True)
class KubeAccount:
    """A Kubernetes identity as a Redfish account."""

    identity: reviews.Identity
    reviewer: reviews.Reviews = dataclasses.field(
        compare=False, repr=False)
    #: No predefined role: RBAC decides.
    role = 'Kubernetes RBAC'

    @property
    def name(self):
        return self.identity.user

    @property
    def groups(self):
        return self.identity.groups

    def allows(self, privilege):
        """Whether the privilege is held whatever the request (Login)."""
        return privilege in GIVEN

    def may(self, resource=None, path=None, verb='get'):
        """Whether RBAC allows it; a review that fails refuses."""
        try:
            return self.reviewer.allowed(self.identity, resource, path,
                                         verb)
        except apierrors.ApiError as exc:
            LOG.warning('Refused %s: the access review failed (%s)',
                        self.identity.user, type(exc).__name__)
            return False

    def reaches(self, namespace, labels=None):
        """Whether it may list the VMs of ``namespace`` (None: of all).

        ``labels`` do not matter: RBAC grants namespaces.
        """
        return self.may(permissions.reach(namespace or ''))


class KubeAccounts:
    """The identities of one cluster's bearer tokens.

    :param reviews: a :class:`~sushy_kubevirt.kube.reviews.Reviews`.
    """

    def __init__(self, reviewer):
        self.reviewer = reviewer

    def authenticate(self, token):
        """The KubeAccount of ``token``, or None when it is not valid.

        :raises apierrors.ApiError: the review could not be made.
        """
        identity = self.reviewer.authenticate(token)
        return None if identity is None else KubeAccount(identity,
                                                         self.reviewer)

    def known(self, token):
        """Whether the API server vouched for ``token`` lately (no call)."""
        return self.reviewer.known(token)

    def account(self, user, groups=()):
        """The KubeAccount of a user already authenticated (a session)."""
        return KubeAccount(reviews.Identity(user, tuple(groups)),
                           self.reviewer)

    def accounts(self):
        """None are listed: accounts are the cluster's identities."""
        return []
