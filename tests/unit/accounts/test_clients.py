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


"""The client of a request: its peer, or what a trusted proxy says."""

import pytest

from sushy_kubevirt.accounts import clients
from sushy_kubevirt import config

PROXIES = clients.trusted({config.TRUSTED_PROXIES_KEY: [
    '10.0.0.0/8', '192.0.2.1', 'fd00::/8']})


def _environ(peer, xff=None, forwarded=None):
    environ = {'REMOTE_ADDR': peer}
    if xff is not None:
        environ['HTTP_X_FORWARDED_FOR'] = xff
    if forwarded is not None:
        environ['HTTP_FORWARDED'] = forwarded
    return environ


@pytest.mark.parametrize('peer, xff, forwarded, client', [
    # An untrusted peer is the client, whatever it says.
    ('203.0.113.9', '198.51.100.1', None, '203.0.113.9'),
    ('203.0.113.9', None, 'for=198.51.100.1', '203.0.113.9'),
    # A trusted proxy: the right-most hop that is no trusted proxy.
    ('10.1.2.3', '198.51.100.1', None, '198.51.100.1'),
    ('10.1.2.3', '6.6.6.6, 198.51.100.1, 10.9.9.9', None, '198.51.100.1'),
    ('10.1.2.3', '198.51.100.1:4711', None, '198.51.100.1'),
    ('192.0.2.1', '[2001:db8::1]:80', None, '2001:db8::1'),
    ('fd00::1', '2001:db8::1, fd00::2', None, '2001:db8::1'),
    ('10.1.2.3', None, 'for=6.6.6.6, for="[2001:db8::1]:4711";proto=https',
     '2001:db8::1'),
    ('10.1.2.3', None, 'For=198.51.100.1;by=10.1.2.3, proto=http',
     '198.51.100.1'),
    ('10.1.2.3', None, 'for=unknown', 'unknown'),
    ('10.1.2.3', '10.5.5.5, 10.6.6.6', None, '10.5.5.5'),   # all trusted
    # Both headers, naming the same client, or not: then the peer.
    ('10.1.2.3', '198.51.100.1', 'for=198.51.100.1', '198.51.100.1'),
    ('10.1.2.3', '198.51.100.1', 'for=198.51.100.2', '10.1.2.3'),
    # No header, or nothing in it.
    ('10.1.2.3', None, None, '10.1.2.3'),
    ('10.1.2.3', ' , ', 'proto=http', '10.1.2.3'),
    ('192.0.2.2', '198.51.100.1', None, '192.0.2.2'),
])
def test_the_client(peer, xff, forwarded, client):
    assert clients.real(_environ(peer, xff, forwarded), PROXIES) == client


def test_without_trusted_proxies_the_headers_are_ignored():
    assert clients.real(_environ('10.1.2.3', '198.51.100.1'), ()) == \
        '10.1.2.3'


def test_a_name_is_cut_short():
    assert clients.real(_environ('10.1.2.3', 'x' * 500), PROXIES) == \
        'x' * 64


@pytest.mark.parametrize('value', ['10.0.0.0/8', ['not-an-address'], [1],
                                   {'a': 1}])
def test_bad_trusted_proxies_name_the_key(value):
    with pytest.raises(config.ConfigError, match='TRUSTED_PROXIES'):
        clients.trusted({config.TRUSTED_PROXIES_KEY: value})
