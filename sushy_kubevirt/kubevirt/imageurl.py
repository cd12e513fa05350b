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

"""Image URLs: parsing, credentials, redaction and the host policy.

Pure functions; no I/O. :func:`parse` accepts an http(s) URL of at most
:data:`MAX_LENGTH` characters without control characters or spaces, and
splits off its userinfo (the credentials go to a Secret, never into a
spec, an annotation, a log line or an answer). :func:`redact` removes
userinfo from any text shown to a client. :func:`refusal` applies the
host policy (SSRF) to a host name and the addresses it resolved to.

Refusals are :class:`Invalid` errors naming a DMTF Base registry message
(``ActionParameter*`` for an action parameter, ``Property*`` for a
resource property) with the value redacted.
"""

import collections
import dataclasses
import ipaddress
import re
import typing
from urllib import parse as urlparse

MAX_LENGTH = 2048
SCHEMES = ('http', 'https')
DEFAULT_PORTS = {'http': 80, 'https': 443}
#: Control characters and spaces: never valid in a URL (CR/LF would also
#: split an HTTP request line).
_FORBIDDEN = re.compile(r'[\x00-\x20\x7f-\x9f]')
_USERINFO = re.compile(r'(//)[^/?#@]*@')
_HOST_NAME = re.compile(
    r'^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9])?'
    r'(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9])?)*\.?$')
#: Denied unless explicitly allowed: "this network", link-local (cloud
#: metadata services live there), multicast, broadcast, the unspecified
#: address and AWS' IPv6 metadata address.
BUILTIN_DENIED = tuple(ipaddress.ip_network(net) for net in (
    '0.0.0.0/8', '169.254.0.0/16', '224.0.0.0/4', '255.255.255.255/32',
    '::/128', 'fe80::/10', 'ff00::/8', 'fd00:ec2::254/128'))
#: Metadata service names, denied unless explicitly allowed.
BUILTIN_DENIED_NAMES = ('metadata.google.internal', 'metadata')

_IDS = {
    # kind: (action parameter message, property message)
    'type': ('ActionParameterValueTypeError', 'PropertyValueTypeError'),
    'format': ('ActionParameterValueFormatError',
               'PropertyValueFormatError'),
    'denied': ('ActionParameterValueConflict', 'PropertyValueFormatError'),
}

Url = collections.namedtuple(
    'Url', ['url', 'scheme', 'host', 'port', 'username', 'password'])


class Invalid(ValueError):
    """Refused input: ``message_id`` and ``message_args`` of Base."""

    def __init__(self, message_id, args, detail):
        super().__init__(detail)
        self.message_id = message_id
        self.message_args = list(args)


def redact(text):
    """``text`` with the userinfo of any URL in it removed."""
    return _USERINFO.sub(r'\1', text)


def shown(value, limit=120):
    """``value`` as it may appear in a message: redacted, shortened."""
    text = _FORBIDDEN.sub(
        '?', redact(value if isinstance(value, str) else repr(value)))
    return text if len(text) <= limit else text[:limit] + '...'


def invalid(kind, value, name, action, detail):
    """An :class:`Invalid` of ``kind`` for parameter/property ``name``.

    :param action: the action (``VirtualMedia.InsertMedia``), or None for
        a resource property.
    """
    message_id = _IDS[kind][action is None]
    value = shown(value)
    if message_id == 'ActionParameterValueConflict':
        args = (name, value)
    elif action is None:
        args = (value, name)
    else:
        args = (value, name, action)
    return Invalid(message_id, args, redact(detail))


def parse(value, name='Image', action=None):
    """Check an image URL; a :class:`Url` without userinfo.

    :raises Invalid: not a string, too long, control characters, not
        http(s), no host, a bad port, userinfo without a password.
    """
    def bad(detail, kind='format'):
        return invalid(kind, value, name, action, '%s %s' % (name, detail))

    if not isinstance(value, str):
        raise bad('must be a string (an http or https URL)', 'type')
    if len(value) > MAX_LENGTH:
        raise Invalid('StringValueTooLong', (shown(value), MAX_LENGTH),
                      '%s is longer than %d characters' % (name, MAX_LENGTH))
    if _FORBIDDEN.search(value):
        raise bad('must not contain spaces or control characters')
    try:
        parts = urlparse.urlsplit(value)
        port = parts.port
    except ValueError:
        raise bad('is not a valid URL') from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise bad('must be an http or https URL')
    host = (parts.hostname or '').lower()
    if not host:
        raise bad('has no host')
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOST_NAME.match(host):
            raise bad('has an invalid host name') from None
    username = password = None
    if '@' in parts.netloc:
        username = urlparse.unquote(parts.username or '')
        password = urlparse.unquote(parts.password or '')
        if not username or not password:
            raise bad('carries a user name without a password (or a '
                      'password without a user name)')
    start = len(parts.scheme) + 3
    url = value[:start] + parts.netloc.rpartition('@')[2] + \
        value[start + len(parts.netloc):]
    return Url(url, scheme, host.rstrip('.'), port or DEFAULT_PORTS[scheme],
               username, password)


@dataclasses.dataclass(frozen=True)
class Policy:
    """Which image hosts may be fetched (names, ``.domain``, CIDRs)."""

    #: Entries a host must match; None: every host not denied. A match
    #: also lifts the built-in denials.
    allowed: typing.Optional[typing.Tuple[str, ...]] = None
    #: Entries always denied.
    denied: typing.Tuple[str, ...] = ()
    #: ``(address, port)`` pairs denied unless allowed: the API server.
    endpoints: typing.FrozenSet[tuple] = frozenset()


def address(text):
    """``text`` as an ip_address (IPv4-mapped IPv6: the IPv4 one)."""
    value = ipaddress.ip_address(text.split('%')[0])
    return getattr(value, 'ipv4_mapped', None) or value


def _matches(entry, host, addresses):
    try:
        network = ipaddress.ip_network(entry, strict=False)
    except ValueError:
        entry = entry.lower().rstrip('.')
        return host == entry.lstrip('.') or (
            entry.startswith('.') and host.endswith(entry))
    return any(address in network for address in addresses)


def refusal(policy, host, port, addresses):
    """Why ``policy`` denies ``host`` (resolved to ``addresses``), or None.

    A host is denied when it (or any of its addresses) matches a denied
    entry; else, with an allow list, unless it matches an allowed entry;
    else when it matches a built-in denial or is the API server.
    """
    addresses = [address(a) for a in addresses]
    try:
        addresses.append(address(host))
    except ValueError:
        pass
    for entry in policy.denied:
        if _matches(entry, host, addresses):
            return 'host %s is denied (%s)' % (host, entry)
    if policy.allowed is not None:
        if any(_matches(entry, host, addresses)
               for entry in policy.allowed):
            return None
        return 'host %s is not in the allowed hosts' % host
    if host in BUILTIN_DENIED_NAMES or any(
            address in network for address in addresses
            for network in BUILTIN_DENIED if
            address.version == network.version):
        return 'host %s is a link-local, metadata or reserved address' % host
    if any((str(address), port) in policy.endpoints
           for address in addresses):
        return 'host %s port %s is the Kubernetes API server' % (host, port)
    return None
