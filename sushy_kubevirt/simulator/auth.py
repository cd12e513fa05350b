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

"""Bearer-token authentication and a first-match authorization table.

Tokens are static, like kube-apiserver's ``--token-auth-file``: each names
a user (also its uid) and its groups; the administrator's token is in
``system:masters``. An authenticated user is also in
``system:authenticated``, and a ServiceAccount's in
``system:serviceaccounts`` and ``system:serviceaccounts:NS``.
"""

import fnmatch
import threading

from sushy_kubevirt.simulator import apistatus

MASTERS = 'system:masters'
AUTHENTICATED = 'system:authenticated'
SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:'


class Authorizer:
    """Tokens map to user names; rules decide (verb, namespace, resource).

    ``resource`` is ``plural`` or ``plural/subresource``; every rule field
    is an fnmatch pattern ('*' by default). The first matching rule wins;
    without a match ``default_allow`` decides (True: everyone is admin).
    """

    def __init__(self, admin_token, admin_user='admin'):
        self._lock = threading.Lock()
        self.tokens = {admin_token: admin_user}
        self.groups = {admin_token: (MASTERS,)}
        self.rules = []
        self.default_allow = True

    def add_token(self, token, user, groups=()):
        with self._lock:
            self.tokens[token] = user
            self.groups[token] = tuple(groups)

    def identity(self, token):
        """``(user, groups)`` of a token, or None if it is unknown."""
        with self._lock:
            user = self.tokens.get(token)
            groups = self.groups.get(token, ())
        if user is None:
            return None
        groups = list(groups)
        prefix, _, rest = user.partition(SERVICE_ACCOUNT_PREFIX)
        namespace = rest.split(':')[0]
        if not prefix and rest.count(':') == 1 and namespace:
            groups += ['system:serviceaccounts',
                       'system:serviceaccounts:' + namespace]
        return user, list(dict.fromkeys(groups + [AUTHENTICATED]))

    def authenticate(self, header):
        """User name for an ``Authorization`` header; 401 otherwise."""
        scheme, _, token = (header or '').partition(' ')
        user = self.tokens.get(token.strip()) \
            if scheme.lower() == 'bearer' else None
        if user is None:
            raise apistatus.unauthorized()
        return user

    def _add(self, allow, user, verb, namespace, resource, group):
        with self._lock:
            self.rules.append((allow, user, verb, namespace, resource,
                               group))

    def allow(self, user='*', verb='*', namespace='*', resource='*',
              group='*'):
        self._add(True, user, verb, namespace, resource, group)

    def deny(self, user='*', verb='*', namespace='*', resource='*',
             group='*'):
        self._add(False, user, verb, namespace, resource, group)

    def forbid_namespace(self, namespace):
        """Deny everyone everything in ``namespace`` (first rule)."""
        with self._lock:
            rule = (False, '*', '*', namespace, '*', '*')
            if rule not in self.rules:
                self.rules.insert(0, rule)

    def allow_namespace(self, namespace):
        """Undo ``forbid_namespace``; False if it was not forbidden."""
        with self._lock:
            rule = (False, '*', '*', namespace, '*', '*')
            if rule not in self.rules:
                return False
            self.rules.remove(rule)
            return True

    def forbidden_namespaces(self):
        with self._lock:
            return sorted(rule[3] for rule in self.rules
                          if rule[:3] == (False, '*', '*')
                          and rule[4:] == ('*', '*'))

    def clear(self):
        with self._lock:
            self.rules = []
            self.default_allow = True

    def authorized(self, user, verb, namespace, resource, group=''):
        subject = (user, verb, namespace or '', resource, group)
        with self._lock:
            rules = list(self.rules)
        for allow, *patterns in rules:
            if all(fnmatch.fnmatchcase(value, pattern)
                   for value, pattern in zip(subject, patterns)):
                return allow
        return self.default_allow
