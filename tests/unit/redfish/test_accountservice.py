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

"""The AccountService's writes outside the account Secrets: a 405."""

from unittest import mock

import flask
import pytest

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import accountservice


@pytest.mark.parametrize('accounts', [
    None, accountsfile.AccountsFile('/nonexistent')])
def test_other_sources_are_read_only(accounts):
    app = flask.Flask(__name__)
    with app.test_request_context(method='POST'), mock.patch.object(
            accountservice.access, 'accounts_of', return_value=accounts):
        with pytest.raises(messages.RedfishError) as caught:
            accountservice._store(app)
    assert caught.value.code == 405
    assert caught.value.message_id == 'OperationNotAllowed'
    assert caught.value.headers == {'Allow': 'GET, HEAD'}
