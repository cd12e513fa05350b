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

"""Where accounts come from: a file, the cluster, Secrets, or nowhere.

``SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE`` chooses: ``file`` (the
default) reads ``SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE`` when it is set
(:mod:`.accountsfile`; without it every user of the htpasswd file is an
Administrator), ``kubernetes`` makes every bearer token's identity an
account that the cluster's RBAC decides for (:mod:`.kubeaccounts`),
``secrets`` keeps each account in a Secret (:mod:`.secretaccounts`).
"""

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt.accounts import secretaccounts
from sushy_kubevirt import config
from sushy_kubevirt.kube import reviews


def accounts(cluster, settings):
    """The accounts ``settings`` name, else None.

    :param settings: :class:`sushy_kubevirt.config.Settings`.
    """
    if settings.accounts_source == config.KUBERNETES:
        return kubeaccounts.KubeAccounts(reviews.Reviews(
            cluster, settings.access_cache_ttl))
    if settings.accounts_source == config.SECRETS:
        return secretaccounts.shared(cluster, settings.accounts_namespace)
    if settings.accounts_file:
        return accountsfile.AccountsFile(settings.accounts_file)
    return None
