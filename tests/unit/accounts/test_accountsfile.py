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

"""The accounts file: roles, reach, and reading it again."""

import os

import pytest

from sushy_kubevirt.accounts import accountsfile

GOOD = '''
accounts:
  admin: {role: Administrator}
  alice: {role: Operator, namespaces: [team-a]}
'''


def test_parse_roles_and_reach():
    accounts = accountsfile.parse(GOOD)
    assert accounts['admin'].namespaces is None
    assert accounts['admin'].reaches('anything')
    alice = accounts['alice']
    assert alice.reaches('team-a') and not alice.reaches('team-b')
    assert alice.allows('ConfigureComponents')
    assert not alice.allows('ConfigureManager')
    assert alice.allows('NoAuth')


def test_a_selector_narrows_the_reach():
    ci = accountsfile.parse(
        "accounts: {ci: {role: Operator, namespaces: [b], "
        "selector: 'pool in (ci)'}}")['ci']
    assert ci.reaches('b', {'pool': 'ci'})
    assert not ci.reaches('b', {'pool': 'prod'})
    assert not ci.reaches('a', {'pool': 'ci'})
    assert not ci.reaches('b')   # a VM whose labels are not known


@pytest.mark.parametrize('text, words', [
    ('accounts: {bob: {role: Root}}', "role 'Root'"),
    ('accounts: {bob: {role: Operator, namespaces: []}}', 'non-empty'),
    ('accounts: {bob: {role: Operator, namespaces: team-a}}', 'list'),
    ('accounts: {bob: {role: Operator, labels: x}}', 'unknown keys labels'),
    ('accounts: {bob: {role: Operator, selector: "a b"}}', 'selector: not'),
    ('accounts: {bob: Operator}', 'mapping with a role'),
    ('users: {}', 'mapping "accounts"'),
    ('accounts: [', 'not valid YAML'),
])
def test_parse_names_what_is_wrong(text, words):
    with pytest.raises(accountsfile.AccountsError, match=words):
        accountsfile.parse(text)


def test_a_changed_file_is_read_again_and_a_broken_one_refuses(tmp_path):
    path = tmp_path / 'accounts.yaml'
    path.write_text(GOOD)
    accounts = accountsfile.AccountsFile(str(path))
    assert accounts.account('alice').role == 'Operator'
    assert accounts.account('mallory') is None

    def replace(text):
        new = tmp_path / 'new'
        new.write_text(text)
        os.replace(new, path)
    replace(GOOD.replace('Operator', 'ReadOnly'))
    assert accounts.account('alice').role == 'ReadOnly'
    replace('accounts: {alice: {role: Administrator')
    with pytest.raises(accountsfile.AccountsError):
        accounts.account('alice')
    path.unlink()
    with pytest.raises(accountsfile.AccountsError, match='Cannot read'):
        accounts.account('alice')
