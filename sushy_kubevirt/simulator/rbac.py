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

"""Roles, bindings and kube-apiserver's RBAC authorizer over them.

``rbac.authorization.k8s.io/v1`` Roles, RoleBindings, ClusterRoles and
ClusterRoleBindings are stored as sent (kube-apiserver's validation of
rules, subjects and roleRef and its escalation check are not modelled).
``authorize`` decides as the RBAC authorizer (plugin/pkg/auth/authorizer/
rbac) does: ClusterRoleBindings first, then the RoleBindings of the
request's namespace; the first rule that allows wins and names its
source in the reason; a binding whose role is missing adds its error to
the reason of a denial. Aggregated ClusterRoles (``aggregationRule``) are
not aggregated: only a ClusterRole's own ``rules`` count.
"""

from sushy_kubevirt.simulator import auth
from sushy_kubevirt.simulator import storage

GROUP = 'rbac.authorization.k8s.io'
ROLES = storage.ResourceType(GROUP, 'v1', 'roles', 'Role',
                             status_subresource=False, custom=False)
ROLEBINDINGS = storage.ResourceType(GROUP, 'v1', 'rolebindings',
                                    'RoleBinding', status_subresource=False,
                                    custom=False)
CLUSTERROLES = storage.ResourceType(GROUP, 'v1', 'clusterroles',
                                    'ClusterRole', namespaced=False,
                                    status_subresource=False, custom=False)
CLUSTERROLEBINDINGS = storage.ResourceType(
    GROUP, 'v1', 'clusterrolebindings', 'ClusterRoleBinding',
    namespaced=False, status_subresource=False, custom=False)
RESOURCES = (ROLES, ROLEBINDINGS, CLUSTERROLES, CLUSTERROLEBINDINGS)


def authorize(store, user, groups, attributes):
    """``(allowed, reason)`` for a request's attributes.

    ``attributes`` holds ``verb`` and either ``path`` (a non-resource
    request) or ``namespace``, ``group``, ``resource``, ``subresource``
    and ``name``.
    """
    errors = []
    namespace = attributes.get('namespace') or ''
    sources = [(CLUSTERROLEBINDINGS, None)]
    if namespace:
        sources.append((ROLEBINDINGS, namespace))
    for rt, ns in sources:
        bindings, _rv = store.snapshot(rt, ns)
        for binding in sorted(bindings, key=_name):
            subject = _subject_of(binding, user, groups, ns or '')
            if subject is None:
                continue
            rules, error = _role_rules(store, binding.get('roleRef') or {},
                                       ns)
            if error:
                errors.append(error)
            if any(rule_allows(rule, attributes) for rule in rules):
                return True, 'RBAC: allowed by ' + _describe(
                    rt, binding, subject, ns)
    if not errors:
        return False, ''
    return False, 'RBAC: ' + (errors[0] if len(errors) == 1 else
                              '[%s]' % ', '.join(errors))


def rule_allows(rule, attributes):
    """One PolicyRule against the attributes (rbacv1 helpers' matching)."""
    if not _has(rule.get('verbs'), attributes.get('verb', '')):
        return False
    if 'path' in attributes:
        return _url_matches(rule.get('nonResourceURLs') or (),
                            attributes['path'])
    subresource = attributes.get('subresource') or ''
    combined = attributes.get('resource') or ''
    if subresource:
        combined += '/' + subresource
    names = rule.get('resourceNames') or ()
    return (_has(rule.get('apiGroups'), attributes.get('group') or '') and
            _resource_matches(rule.get('resources') or (), combined,
                              subresource) and
            (not names or attributes.get('name') in names))


def _has(values, value):
    values = values or ()
    return '*' in values or value in values


def _resource_matches(resources, combined, subresource):
    for resource in resources:
        if resource in ('*', combined):
            return True
        if subresource and resource == '*/' + subresource:
            return True
    return False


def _url_matches(urls, path):
    for url in urls:
        if url in ('*', path):
            return True
        if url.endswith('*') and path.startswith(url[:-1]):
            return True
    return False


def _name(obj):
    return obj['metadata']['name']


def _subject_of(binding, user, groups, namespace):
    """The first of the binding's subjects that is this user, or None."""
    for subject in binding.get('subjects') or ():
        kind, name = subject.get('kind'), subject.get('name')
        if kind == 'User' and name == user:
            return subject
        if kind == 'Group' and name in groups:
            return subject
        if kind == 'ServiceAccount':
            sa_namespace = subject.get('namespace') or namespace
            if sa_namespace and user == '%s%s:%s' % (
                    auth.SERVICE_ACCOUNT_PREFIX, sa_namespace, name):
                return subject
    return None


def _role_rules(store, ref, namespace):
    """``(rules, error)`` of a roleRef; a missing role is an error."""
    kind, name = ref.get('kind'), ref.get('name') or ''
    if kind == 'Role':
        role = store.get_ref(ROLES, namespace, name)
    elif kind == 'ClusterRole':
        role = store.get_ref(CLUSTERROLES, None, name)
    else:
        return [], 'unsupported role reference kind: "%s"' % kind
    if role is None:
        return [], '%s.%s "%s" not found' % (kind.lower(), GROUP, name)
    return role.get('rules') or [], None


def _describe(rt, binding, subject, namespace):
    """The rule's source, as the rule resolver's describers print it."""
    name = _name(binding)
    if rt is ROLEBINDINGS:
        name = '%s/%s' % (name, namespace)
    ref = binding.get('roleRef') or {}
    who = subject.get('name', '')
    if subject.get('kind') == 'ServiceAccount':
        who = '%s/%s' % (who, subject.get('namespace') or namespace)
    return '%s "%s" of %s "%s" to %s "%s"' % (
        rt.kind, name, ref.get('kind'), ref.get('name'), subject.get('kind'),
        who)
