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

"""Accepted Basic credentials skip bcrypt until the auth file changes."""

import bcrypt
import pytest

from sushy_kubevirt.accounts import attempts
from sushy_kubevirt.accounts import throttle
from sushy_kubevirt.redfish import auth


class Locked:
    def __init__(self):
        self.attempts = []

    def attempt(self, user, client, correct):
        self.attempts.append((user, client, correct))
        return False


def _entry(path, password):
    path.write_text('admin:%s\n' % bcrypt.hashpw(
        password, bcrypt.gensalt(4)).decode())


def test_remembered_until_the_entry_changes(tmp_path, monkeypatch):
    checks = []
    checkpw = bcrypt.checkpw
    monkeypatch.setattr(auth.bcrypt, 'checkpw', lambda *args: checks.append(
        args) or checkpw(*args))
    path = tmp_path / 'htpasswd'
    _entry(path, b'pw')
    assert [auth.verify(str(path), 'admin', b'pw') for _ in range(3)] == [
        True] * 3
    assert len(checks) == 1
    assert auth.verify(str(path), 'admin', b'other') is False
    assert len(checks) == 2

    locked = Locked()
    guard = attempts.Guard('c', throttle.Throttle(throttle.Policy()), locked)
    assert auth.verify(str(path), 'admin', b'pw', guard) is False
    assert locked.attempts == [('admin', 'c', True)] and len(checks) == 2

    _entry(path, b'new')   # the password changed: the old one is refused
    assert auth.verify(str(path), 'admin', b'pw') is False
    assert auth.verify(str(path), 'admin', b'new') is True
    assert len(checks) == 4


def test_only_unknown_credentials_are_throttled(tmp_path, monkeypatch):
    checks = []
    checkpw = bcrypt.checkpw
    monkeypatch.setattr(auth.bcrypt, 'checkpw', lambda *args: checks.append(
        args) or checkpw(*args))
    path = tmp_path / 'htpasswd'
    path.write_text(''.join('%s:%s\n' % (user, bcrypt.hashpw(
        b'pw', bcrypt.gensalt(4)).decode()) for user in ('admin', 'other')))
    guard = attempts.Guard('c', throttle.Throttle(throttle.Policy(
        rate=0.001, burst=2)))
    assert auth.verify(str(path), 'admin', b'pw', guard) is True
    for _ in range(2):
        assert auth.verify(str(path), 'other', b'wrong', guard) is False
    with pytest.raises(attempts.Throttled):
        auth.verify(str(path), 'other', b'pw', guard)
    for _ in range(2):                  # user names that are no account
        assert auth.verify(str(path), 'nobody', b'pw', guard) is False
    with pytest.raises(attempts.Throttled):
        auth.verify(str(path), 'nobody-else', b'pw', guard)
    checked = len(checks)
    assert auth.verify(str(path), 'admin', b'pw', guard) is True   # known
    assert len(checks) == checked
    for _ in range(2):      # a check of its own account, successful or not
        assert auth.verify(str(path), 'admin', b'pw2', guard) is False
    assert auth.verify(str(path), 'admin', b'pw', guard) is True
