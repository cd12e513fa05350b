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

"""The emulator's identity on a real control plane, with the shipped RBAC.

The Role of ``etc/kubernetes/base/role.yaml`` (one per served namespace)
or the cluster overlay's ClusterRole and its Role of the emulator's own
namespace (``cluster=True``), bound to a ServiceAccount, exactly as the
manifests deploy them; nothing is added, so a verb the manifests lack fails the
tests that need it. ``emulator_kubeconfig`` writes a kubeconfig with a
bound token of that ServiceAccount.
"""

import os
import pathlib
import sys

import yaml

SERVICE_ACCOUNT = 'sushy-kubevirt'
#: The emulator's user name: the ServiceAccount the manifests deploy.
EMULATOR_USER = 'system:serviceaccount:%s:%s' % (SERVICE_ACCOUNT,
                                                 SERVICE_ACCOUNT)
RBAC_PATH = '/apis/rbac.authorization.k8s.io/v1'


def manifests_dir():
    """``etc/kubernetes``: the source tree's, else the installed copy."""
    explicit = os.environ.get('SUSHY_KUBEVIRT_MANIFESTS')
    candidates = [pathlib.Path(explicit)] if explicit else []
    candidates += [
        pathlib.Path(__file__).resolve().parents[2] / 'etc' / 'kubernetes',
        pathlib.Path(sys.prefix) / 'share' / 'sushy-kubevirt' / 'kubernetes']
    for path in candidates:
        if (path / 'base' / 'role.yaml').is_file():
            return path
    raise FileNotFoundError(
        'etc/kubernetes (the shipped RBAC) not found in %s; set '
        '$SUSHY_KUBEVIRT_MANIFESTS' % ', '.join(map(str, candidates)))


def _documents(path):
    with open(path) as stream:
        return [doc for doc in yaml.safe_load_all(stream) if doc]


def _subject(namespace):
    return [{'kind': 'ServiceAccount', 'name': SERVICE_ACCOUNT,
             'namespace': namespace}]


def bind(cp, account_namespace, namespaces=(), cluster=False):
    """Bind the shipped RBAC to the ServiceAccount.

    The Role in each of ``namespaces``; if ``cluster``, the ClusterRole
    cluster-wide and the cluster overlay's Role in ``account_namespace``.
    """
    base = manifests_dir()
    roles = [(namespace, base / 'base' / 'role.yaml')
             for namespace in namespaces]
    if cluster:
        overlay = base / 'overlays' / 'cluster'
        for doc in _documents(overlay / 'clusterrole.yaml'):
            plural = doc['kind'].lower() + 's'
            if doc['kind'] == 'ClusterRoleBinding':
                doc['subjects'] = _subject(account_namespace)
            cp.apply('%s/%s' % (RBAC_PATH, plural), doc)
        roles.append((account_namespace, overlay / 'role.yaml'))
    for namespace, path in roles:
        cp.ensure_namespace(namespace)
        for doc in _documents(path):
            doc['metadata']['namespace'] = namespace
            if doc['kind'] == 'RoleBinding':
                doc['subjects'] = _subject(account_namespace)
            cp.apply('%s/namespaces/%s/%ss' % (RBAC_PATH, namespace,
                                               doc['kind'].lower()), doc)


def bind_reviews(cp, account_namespace=SERVICE_ACCOUNT):
    """Bind the ``kubernetes-accounts`` component's ClusterRole.

    TokenReviews and SubjectAccessReviews, for the ``kubernetes``
    accounts source.
    """
    path = (manifests_dir() / 'components' / 'kubernetes-accounts' /
            'reviews.yaml')
    for doc in _documents(path):
        if doc['kind'] == 'ClusterRoleBinding':
            doc['subjects'] = _subject(account_namespace)
        cp.apply('%s/%ss' % (RBAC_PATH, doc['kind'].lower()), doc)


def emulator_kubeconfig(cp, path, namespaces=(), cluster=False,
                        account_namespace=SERVICE_ACCOUNT,
                        default_namespace=None):
    """Write a kubeconfig for the emulator's ServiceAccount; its path.

    The account is bound to the shipped RBAC first (``bind``).
    """
    cp.ensure_namespace(account_namespace)
    bind(cp, account_namespace, namespaces, cluster)
    token = cp.service_account_token(account_namespace, SERVICE_ACCOUNT)
    return cp.write_kubeconfig(
        path, token=token, user=SERVICE_ACCOUNT,
        namespace=default_namespace or (list(namespaces) or
                                        [account_namespace])[0])
