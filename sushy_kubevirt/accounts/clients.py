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

"""Who a request comes from: its peer, or the client a trusted proxy names.

The failed-login defences count per client. A request's client is the
address of the connection's peer, unless that peer is one of the trusted
proxies (``SUSHY_EMULATOR_KUBEVIRT_TRUSTED_PROXIES``, addresses and
CIDRs; none by default). Then it is the right-most hop of
``X-Forwarded-For`` or of ``Forwarded``'s ``for=`` that is not a trusted
proxy (the left-most when all are), as proxies find it: hops further left
were sent by the client and prove nothing. A hop that is not an address
(``unknown``, an obfuscated name) is a client of that name. A request
whose two headers name different clients is the peer's: one of them was
written by the client.
"""

import ipaddress

from werkzeug import http

from sushy_kubevirt import config

#: Characters of a hop that are kept (a name is no longer than this).
_LONGEST = 64


def trusted(app_config):
    """The trusted proxies of the config: a tuple of networks.

    :raises sushy_kubevirt.config.ConfigError: naming the key.
    """
    key = config.TRUSTED_PROXIES_KEY
    value = app_config.get(key) or ()
    try:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) \
                or not all(isinstance(item, str) for item in value):
            raise ValueError(value)
        return tuple(ipaddress.ip_network(item, strict=False)
                     for item in value)
    except ValueError:
        raise config.ConfigError('%s must be a list of addresses or CIDRs, '
                                 'not %r' % (key, value)) from None


def _address(hop):
    """The address of a hop (port and brackets dropped), else None."""
    host = hop
    if hop.startswith('['):
        host = hop[1:].partition(']')[0]
    elif hop.count(':') == 1:
        host = hop.partition(':')[0]
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _trusted(address, proxies):
    return address is not None and any(
        address.version == net.version and address in net for net in proxies)


def _client(hops, proxies):
    """The right-most hop that is no trusted proxy (else the left-most)."""
    for hop in reversed(hops):
        address = _address(hop)
        if not _trusted(address, proxies):
            return str(address) if address else hop[:_LONGEST]
    return str(_address(hops[0]))


def _forwarded_for(value):
    """The ``for=`` of each element of a ``Forwarded`` header, in order."""
    hops = (http.parse_options_header('_;' + element)[1].get('for')
            for element in http.parse_list_header(value))
    return [hop for hop in hops if hop]


def real(environ, proxies):
    """The client of the WSGI request ``environ`` (a string).

    :param proxies: the trusted proxies (:func:`trusted`).
    """
    peer = environ.get('REMOTE_ADDR') or ''
    if not proxies or not _trusted(_address(peer), proxies):
        return peer
    named = set()
    for value, parse in ((environ.get('HTTP_X_FORWARDED_FOR'),
                          http.parse_list_header),
                         (environ.get('HTTP_FORWARDED'), _forwarded_for)):
        # Werkzeug before 3.0 parses ' , ' as [''].
        hops = [hop for hop in parse(value) if hop] if value else []
        if hops:
            named.add(_client(hops, proxies))
    return named.pop() if len(named) == 1 else peer
