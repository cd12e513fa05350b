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

"""The AccountService: the account lockout policy, read-only.

The lockout itself is kept in Kubernetes
(:mod:`sushy_kubevirt.accounts.lockout`), shared by every worker.
"""

import flask

from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import privileges
from sushy_kubevirt.redfish import root
from sushy_kubevirt.redfish import sessions


def resource(policy):
    """A minimal AccountService: the lockout policy, read-only."""
    return {
        '@odata.type': '#AccountService.v1_5_0.AccountService',
        '@odata.id': root.ACCOUNT_SERVICE,
        'Id': 'AccountService',
        'Name': 'Account Service',
        'ServiceEnabled': True,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'AccountLockoutThreshold': policy.threshold,
        'AccountLockoutDuration': policy.duration,
        'AccountLockoutCounterResetAfter': policy.reset_after,
        'AccountLockoutCounterResetEnabled': True,
    }


@base.route(root.ACCOUNT_SERVICE, GET=privileges.LOGIN)
def account_service():
    store = sessions.sessions_of(flask.current_app)
    return flask.jsonify(resource(store.policy.lockout_policy))
