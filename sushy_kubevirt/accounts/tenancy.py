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

"""The account a request acts for, and what it reaches.

The authentication middleware names the user; the Redfish layer sets the
:class:`~sushy_kubevirt.accounts.accountsfile.Account` for the request
(:func:`set_current`); the drivers ask :func:`reaches` so that a VM
outside the account's namespaces does not exist for it. Outside a request
(the drivers' own threads), or without authentication, nothing is
restricted.
"""

import flask

_KEY = 'sushy_kubevirt_account'


def set_current(account):
    """Make ``account`` (None: unrestricted) this request's account."""
    setattr(flask.g, _KEY, account)


def current():
    """This request's Account, or None when nothing is restricted."""
    if not flask.has_app_context():
        return None
    return getattr(flask.g, _KEY, None)


def reaches(namespace, labels=None):
    """Whether this request may see a VM of ``namespace`` with ``labels``."""
    account = current()
    return account is None or account.reaches(namespace, labels)
