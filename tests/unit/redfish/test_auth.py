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

"""Basic credentials parsing and the htpasswd check."""

import base64

import bcrypt
import pytest

from sushy_kubevirt.redfish import auth


def _basic(text):
    return 'Basic ' + base64.b64encode(text).decode()


@pytest.mark.parametrize('header, expected', [
    (_basic(b'admin:pw'), ('admin', b'pw')),
    (_basic(b'admin:p:w'), ('admin', b'p:w')),
    ('basic ' + base64.b64encode(b'a:').decode(), ('a', b'')),
    (_basic(b'no-colon'), None),
    ('Basic !!!', None),
    ('Bearer x', None),
    ('Basic', None),
    ('', None),
    (None, None),
    (_basic(b'\xff:x'), None),
])
def test_basic_credentials(header, expected):
    assert auth.basic_credentials(header) == expected


def test_verify(tmp_path):
    path = tmp_path / 'htpasswd'
    path.write_text('admin:%s\nbroken\nmd5:$apr1$x$y\n' % bcrypt.hashpw(
        b'pw', bcrypt.gensalt(4)).decode())
    assert auth.verify(str(path), 'admin', b'pw') is True
    assert auth.verify(str(path), 'admin', b'other') is False
    assert auth.verify(str(path), 'nobody', b'pw') is False
    assert auth.verify(str(path), 'md5', b'pw') is False
