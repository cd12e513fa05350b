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

"""Image URL parsing and the host policy (pure functions)."""

import pytest

from sushy_kubevirt.kubevirt import imageurl

API = frozenset({('10.96.0.1', 443)})


def test_userinfo_is_split_off():
    url = imageurl.parse('HTTP://us%40er:p%3Ass@Host.Example:8080/a.iso?x')
    assert url == imageurl.Url('HTTP://Host.Example:8080/a.iso?x', 'http',
                               'host.example', 8080, 'us@er', 'p:ss')
    assert imageurl.parse('https://[::1]/x').port == 443


def test_redact_removes_every_userinfo():
    assert imageurl.redact('a http://u:p@h/x and https://v:q@[::1]:1/y') \
        == 'a http://h/x and https://[::1]:1/y'


@pytest.mark.parametrize('value,message_id', [
    (None, 'ActionParameterValueTypeError'),
    ('http://[::1/x.iso', 'ActionParameterValueFormatError'),
    ('http://h/x\r\nHost: evil', 'ActionParameterValueFormatError'),
    ('http://h/%s' % ('a' * 2048), 'StringValueTooLong'),
    ('ftp://h/x', 'ActionParameterValueFormatError'),
    ('http://h:0x1/x', 'ActionParameterValueFormatError'),
    ('http://bad_host!/x', 'ActionParameterValueFormatError'),
    ('http://u@h/x', 'ActionParameterValueFormatError'),
])
def test_refused(value, message_id):
    with pytest.raises(imageurl.Invalid) as exc:
        imageurl.parse(value, 'Image', 'VirtualMedia.InsertMedia')
    assert exc.value.message_id == message_id
    assert '\r' not in ''.join(map(str, exc.value.message_args))


def test_property_messages_without_an_action():
    with pytest.raises(imageurl.Invalid) as exc:
        imageurl.parse(5, 'Boot/HttpBootUri')
    assert exc.value.message_id == 'PropertyValueTypeError'
    assert exc.value.message_args == ['5', 'Boot/HttpBootUri']


def test_the_value_shown_is_redacted():
    with pytest.raises(imageurl.Invalid) as exc:
        imageurl.parse('ftp://u:secret@h/x', 'Image', 'A')
    assert 'secret' not in str(exc.value.message_args)


@pytest.mark.parametrize('host,port,addresses', [
    ('169.254.169.254', 80, []),
    ('h', 80, ['169.254.10.1']),
    ('h', 80, ['10.0.0.1', 'fe80::1%eth0']),
    ('h', 80, ['::ffff:169.254.169.254']),
    ('metadata.google.internal', 80, ['10.1.1.1']),
    ('0.0.0.0', 80, []),
    ('kubernetes.default.svc', 443, ['10.96.0.1']),
])
def test_builtin_denials(host, port, addresses):
    policy = imageurl.Policy(endpoints=API)
    assert imageurl.refusal(policy, host, port, addresses)


def test_the_api_address_on_another_port_is_allowed():
    policy = imageurl.Policy(endpoints=API)
    assert imageurl.refusal(policy, '10.96.0.1', 8080, []) is None


def test_allow_and_deny_lists():
    policy = imageurl.Policy(
        allowed=('.images.example', '192.0.2.0/24', 'exact.example',
                 '169.254.1.1'),
        denied=('bad.images.example', '192.0.2.66'), endpoints=API)
    allowed = [('a.images.example', ['198.51.100.1']),
               ('images.example', []), ('exact.example', []),
               ('h', ['192.0.2.7']), ('169.254.1.1', [])]
    denied = [('bad.images.example', ['198.51.100.1']),
              ('h', ['192.0.2.66']), ('x.exact.example', []),
              ('h', ['198.51.100.1']), ('notimages.example', [])]
    for host, addresses in allowed:
        assert imageurl.refusal(policy, host, 80, addresses) is None, host
    for host, addresses in denied:
        assert imageurl.refusal(policy, host, 80, addresses), host
