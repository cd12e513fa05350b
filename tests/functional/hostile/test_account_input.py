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

"""Label selectors Kubernetes would refuse, given to AccountService.

An account whose selector no label can satisfy would reach nothing, so
it is a 400 ``PropertyValueFormatError`` naming ``LabelSelector``, and no
account Secret is written or changed.
"""

import bcrypt
import pytest
import requests
from tests import backend
from tests.functional.hostile import conftest

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import secretaccounts

ACCOUNTS = '/redfish/v1/AccountService/Accounts'
ADMIN = ('admin', 'Admin-password-1')
PROPERTY = 'Oem/SushyKubevirt/LabelSelector'
BAD_SELECTORS = [
    ('64-character value', 'team=' + 'a' * 64),
    ('64-character key name', 'k' * 64 + '=a'),
    ('254-character key prefix', 'p' * 254 + '/team=a'),
    ('upper-case key prefix', 'Example.com/team=a'),
    ('100 KB', 'team=a,' * 14628 + 'team=a'),
]


def _secrets(sim):
    """``{name: resourceVersion}`` of the account Secrets."""
    status, body = backend.admin_request(
        sim, 'GET', '/api/v1/namespaces/default/secrets?labelSelector=%s'
        '%%3Dtrue' % secretaccounts.LABEL)
    assert status == 200, body
    return {s['metadata']['name']: s['metadata']['resourceVersion']
            for s in body['items']}


@pytest.fixture(scope='module')
def emulator_settings(sim):
    """Accounts in Secrets; the first Administrator made as kubectl would."""
    digest = bcrypt.hashpw(ADMIN[1].encode(), bcrypt.gensalt(4))
    status, body = backend.admin_request(
        sim, 'POST', '/api/v1/namespaces/default/secrets', {
            'apiVersion': 'v1', 'kind': 'Secret',
            'metadata': {'name': secretaccounts.PREFIX + ADMIN[0],
                         'labels': {secretaccounts.LABEL: 'true'}},
            'data': secretaccounts.data(
                accountsfile.Account(ADMIN[0], 'Administrator'),
                digest.decode())})
    assert status == 201, body
    return {'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE': 'secrets'}


@pytest.fixture(scope='module')
def url(emulator):
    return emulator.url + ACCOUNTS


@pytest.fixture(scope='module')
def bob(emulator, url):
    """The URL of an account whose selector the tests try to change."""
    made = requests.post(url, auth=ADMIN, timeout=30, json={
        'UserName': 'bob', 'Password': 'bob-password-1',
        'RoleId': 'Operator',
        'Oem': {'SushyKubevirt': {'LabelSelector': 'team=a'}}})
    assert made.status_code == 201, made.text
    return emulator.url + made.headers['Location']


def _refused(sim, tally, send):
    before = _secrets(sim)
    answer = send()
    changed = _secrets(sim) != before
    tally.record(answer, changed)
    assert answer.status_code == 400, answer.text
    assert conftest.message_id(answer) == 'PropertyValueFormatError'
    info = answer.json()['error']['@Message.ExtendedInfo'][0]
    assert info['RelatedProperties'] == ['/' + PROPERTY]
    assert not changed


@pytest.mark.parametrize('case, selector', BAD_SELECTORS,
                         ids=[c for c, _ in BAD_SELECTORS])
def test_a_selector_kubernetes_refuses_is_refused(sim, tally, url, bob,
                                                  case, selector):
    oem = {'SushyKubevirt': {'LabelSelector': selector}}
    eve = {'UserName': 'eve', 'Password': 'eve-password-1',
           'RoleId': 'Operator', 'Oem': oem}
    _refused(sim, tally, lambda: requests.post(url, auth=ADMIN, timeout=30,
                                               json=eve))
    _refused(sim, tally, lambda: requests.patch(
        bob, auth=ADMIN, timeout=30, json={'Oem': oem}))


def test_the_longest_labels_kubernetes_allows_are_kept(url, bob):
    selector = 'example.com/%s=%s' % ('k' * 63, 'v' * 63)
    answer = requests.patch(bob, auth=ADMIN, timeout=30, json={
        'Oem': {'SushyKubevirt': {'LabelSelector': selector}}})
    assert answer.status_code in (200, 204), answer.text
    shown = requests.get(bob, auth=ADMIN, timeout=30).json()
    assert shown['Oem']['SushyKubevirt']['LabelSelector'] == selector
