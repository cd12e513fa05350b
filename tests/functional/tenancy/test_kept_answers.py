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

"""A System's kept answer reaches only the accounts that may read it.

Once a System's answer is kept (an Administrator read it twice), it is
served before Flask to every request, after authentication: still only
to accounts of its namespace, by Basic credentials or a session token.
"""

import requests
from tests.functional.tenancy import conftest

SESSIONS = '/redfish/v1/SessionService/Sessions'


def _login(url, user):
    response = requests.post(url + SESSIONS, json={
        'UserName': user, 'Password': conftest.PASSWORD}, timeout=30)
    assert response.status_code == 201, response.text
    return response.headers['X-Auth-Token'], response.headers['Location']


def test_the_kept_answer_by_basic_credentials(emulator, clients, systems):
    path = systems[conftest.OWN][0]
    first = clients['admin'].get(path)
    assert first.status_code == 200
    assert clients['admin'].get(path).content == first.content
    for user in ('admin', 'op-a', 'ro-a'):
        assert clients[user].get(path).content == first.content
    assert clients['op-b'].get(path).status_code == 404
    assert clients['stranger'].get(path).status_code == 401
    for auth in (None, ('admin', 'wrong-password')):
        assert requests.get(emulator.url + path, auth=auth,
                            timeout=30).status_code == 401


def test_the_kept_answer_by_session_token(emulator, clients, systems):
    path = systems[conftest.OWN][0]
    first = clients['admin'].get(path)
    assert clients['admin'].get(path).content == first.content
    own, own_session = _login(emulator.url, 'ro-a')
    foreign, _ = _login(emulator.url, 'op-b')

    def get(token):
        return requests.get(emulator.url + path, timeout=30,
                            headers={'X-Auth-Token': token})
    assert get(own).content == first.content
    assert get(foreign).status_code == 404
    response = requests.delete(emulator.url + own_session, timeout=30,
                               headers={'X-Auth-Token': own})
    assert response.status_code == 204, response.text
    assert get(own).status_code == 401
