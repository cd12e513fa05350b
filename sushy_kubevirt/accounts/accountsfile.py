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

"""The accounts file: each user's role and the namespaces they reach.

``SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE`` names a YAML file that gives
each user of the htpasswd file a predefined role
(:data:`~sushy_kubevirt.accounts.privileges.ROLES`) and, optionally, the
namespaces whose VirtualMachines they reach::

    accounts:
      admin: {role: Administrator}
      alice: {role: Operator, namespaces: [team-a]}
      auditor: {role: ReadOnly, namespaces: [team-a, team-b]}
      ci: {role: Operator, namespaces: [team-b], selector: 'pool in (ci)'}

An account without ``namespaces`` reaches every namespace served; with
a ``selector`` (a label selector), only the VMs whose labels match it. A user
the file does not name cannot log in. Without the setting every
authenticated user is an Administrator of everything served.

The file is read again when its modification time or size changes, as
the htpasswd file is read for every request; a file that no longer parses
refuses every request (:class:`AccountsError`) until it is fixed, rather
than keeping access that an edit meant to take away.
"""

import dataclasses
import functools
import os
import threading
import typing

import yaml

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.kube import labelselector


class AccountsError(ValueError):
    """The accounts file cannot be read or is not valid."""


@dataclasses.dataclass(frozen=True)
class Account:
    """One user's role and reach."""

    #: The user name (of the htpasswd file).
    name: str
    #: A predefined role (:data:`~.privileges.ROLES`).
    role: str
    #: The namespaces reached; None: every namespace served.
    namespaces: typing.Optional[typing.FrozenSet[str]] = None
    #: The label selector a VM must match to be reached; None: any VM.
    selector: typing.Optional[str] = None

    @property
    def groups(self):
        """Kubernetes groups: none (the file names users)."""
        return ()

    @property
    def privileges(self):
        return privileges.ROLES[self.role]

    def allows(self, privilege):
        """Whether the role holds ``privilege`` (NoAuth: always)."""
        return privilege == privileges.NO_AUTH or \
            privilege in self.privileges

    def reaches(self, namespace, labels=None):
        """Whether a VM of ``namespace`` with ``labels`` exists for it.

        ``namespace`` None: every namespace; ``labels`` None: any VM's
        (only an account without a selector reaches them all).
        """
        if self.namespaces is not None and namespace not in self.namespaces:
            return False
        if self.selector is None:
            return True
        return labels is not None and _matcher(self.selector)(labels)


def administrator(name):
    """The account of every user when no accounts file is set."""
    return Account(name, privileges.ADMINISTRATOR)


def make_account(name, entry, path):
    """The Account of one ``{role, namespaces, selector}`` entry.

    :raises AccountsError: naming ``path`` and the account.
    """
    where = '%s: account %r' % (path, name)
    if not isinstance(entry, dict):
        raise AccountsError('%s must be a mapping with a role' % where)
    extra = sorted(set(entry) - {'role', 'namespaces', 'selector'})
    if extra:
        raise AccountsError('%s has unknown keys %s (role, namespaces, '
                            'selector)' % (where, ', '.join(extra)))
    role = entry.get('role')
    if role not in privileges.ROLES:
        raise AccountsError('%s: role %r is not one of %s' % (
            where, role, ', '.join(privileges.ROLES)))
    namespaces = entry.get('namespaces')
    if namespaces is not None:
        if not isinstance(namespaces, list) or not namespaces or not all(
                isinstance(n, str) and n for n in namespaces):
            raise AccountsError('%s: namespaces must be a non-empty list of '
                                'names; leave it out to reach every '
                                'namespace' % where)
        namespaces = frozenset(namespaces)
    selector = entry.get('selector')
    if selector is not None:
        try:
            _matcher(selector)
        except ValueError as exc:
            raise AccountsError('%s: selector: %s' % (where, exc)) from None
    return Account(name, role, namespaces, selector)


@functools.lru_cache(maxsize=256)
def _matcher(selector):
    return labelselector.parse(selector)


def parse(text, path='accounts file'):
    """``{user: Account}`` of the file's text.

    :raises AccountsError: naming the file and the account.
    """
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AccountsError('%s is not valid YAML: %s' % (path, exc)) \
            from None
    accounts = (document or {}).get('accounts') \
        if isinstance(document, dict) else None
    if not isinstance(accounts, dict):
        raise AccountsError('%s must hold a mapping "accounts" of user '
                            'names' % path)
    return {str(name): make_account(str(name), entry, path)
            for name, entry in accounts.items()}


class AccountsFile:
    """The accounts of ``path``, read again whenever the file changes."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        self._stamp = None
        self._accounts = {}
        self._error = None

    def _current(self):
        try:
            stat = os.stat(self.path)
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except OSError as exc:
            raise AccountsError('Cannot read the accounts file %s: %s'
                                % (self.path, exc.strerror)) from None
        with self._lock:
            if stamp != self._stamp:
                try:
                    with open(self.path, 'rb') as stream:
                        self._accounts = parse(stream.read(), self.path)
                    self._error = None
                except (OSError, AccountsError) as exc:
                    self._accounts, self._error = {}, AccountsError(
                        str(exc))
                self._stamp = stamp
            if self._error is not None:
                raise self._error
            return self._accounts

    def account(self, user, groups=()):
        """The Account of ``user``, or None when the file does not name it.

        :param groups: ignored (the file names users only).
        :raises AccountsError: the file cannot be read or is not valid.
        """
        return self._current().get(user)

    def accounts(self):
        """Every account, by user name."""
        return sorted(self._current().values(), key=lambda a: a.name)
