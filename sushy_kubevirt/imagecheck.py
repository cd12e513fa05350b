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

"""The image check of InsertMedia: resolve, apply the host policy, HEAD.

One deadline covers the whole check: name resolution (in a helper
thread, since ``getaddrinfo`` cannot be timed out), each connection, TLS
handshake, request and response header of every redirect hop. A
watchdog timer shuts the socket down at the deadline, so a server that
trickles its headers cannot hold the check longer. Connections go to the
addresses the policy approved (no second resolution), and credentials are
sent to the image's own origin only.

Written with ``http.client`` rather than ``requests``: ``requests`` has a
timeout per socket read, not per request, follows redirects without a
hook between resolution and connection, and resolves names again.

:func:`check` raises :exc:`Refused` when the policy denies a host of the
chain (or the name does not resolve); everything else a server can do
(refuse the connection, time out, answer an error, speak no HTTP) only
makes the size unknown: a closed port and an open one look the same to a
Redfish client, and CDI's import reports the real outcome.
"""

import base64
import http.client
import socket
import ssl
import threading
import time
from urllib import parse as urlparse

from sushy_kubevirt.kubevirt import imageurl

REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = 'sushy-kubevirt-image-check'


class Refused(Exception):
    """The policy denies a host of the chain (message: which and why)."""


class Unavailable(Exception):
    """The image could not be asked for its size (the reason is logged)."""


def _left(deadline):
    left = deadline - time.monotonic()
    if left <= 0:
        raise Unavailable('deadline reached')
    return left


def resolve(host, port, deadline):
    """The addresses of ``host`` (itself when an address), by ``deadline``.

    :raises Refused: the name does not resolve in time.
    """
    try:
        socket.inet_pton(socket.AF_INET6 if ':' in host else socket.AF_INET,
                         host)
        return [host]
    except OSError:
        pass
    found = {}

    def lookup():
        try:
            found['infos'] = socket.getaddrinfo(host, port,
                                                type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            found['error'] = exc

    worker = threading.Thread(target=lookup, name='resolve %s' % host,
                              daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if 'infos' not in found:
        raise Refused('host %s cannot be resolved' % host)
    return list(dict.fromkeys(info[4][0] for info in found['infos']))


def endpoints(api_url, timeout):
    """``(address, port)`` pairs the API server at ``api_url`` listens on.

    Empty when its host does not resolve within ``timeout`` seconds.
    """
    try:
        url = imageurl.parse(api_url, 'host')
        found = resolve(url.host, url.port, time.monotonic() + timeout)
    except (imageurl.Invalid, Refused):
        return frozenset()
    return frozenset((str(imageurl.address(a)), url.port) for a in found)


def _shutdown(holder):
    try:
        holder[0].shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _connect(addresses, port, deadline):
    for address in addresses:
        try:
            return socket.create_connection((address, port),
                                            timeout=_left(deadline))
        except OSError:
            continue
    raise Unavailable('no address accepted a connection')


def head(url, addresses, deadline, authorization=None, context=None):
    """``(status, Location, Content-Length)`` of a HEAD of ``url``.

    ``context``: the ``ssl.SSLContext`` of an https server (default: the
    system's CAs, verified).

    :raises Unavailable: no answer by ``deadline``, or not HTTP.
    """
    holder = [_connect(addresses, url.port, deadline)]
    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()),
                               _shutdown, (holder,))
    watchdog.daemon = True
    watchdog.start()
    try:
        if url.scheme == 'https':
            holder[0].settimeout(_left(deadline))
            holder[0] = (context or ssl.create_default_context()).wrap_socket(
                holder[0], server_hostname=url.host)
        conn = http.client.HTTPConnection(url.host, url.port,
                                          timeout=_left(deadline))
        conn.sock = holder[0]
        parts = urlparse.urlsplit(url.url)
        headers = {'User-Agent': USER_AGENT, 'Accept': '*/*'}
        if authorization:
            headers['Authorization'] = authorization
        conn.request('HEAD', (parts.path or '/') + (
            '?' + parts.query if parts.query else ''), headers=headers)
        answer = conn.getresponse()
        _left(deadline)
        return (answer.status, answer.getheader('Location'),
                answer.getheader('Content-Length'))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise Unavailable('%s: %s' % (type(exc).__name__, exc)) from exc
    finally:
        watchdog.cancel()
        holder[0].close()


def _basic(username, password):
    token = ('%s:%s' % (username, password)).encode('utf-8')
    return 'Basic ' + base64.b64encode(token).decode('ascii')


def _origin(url):
    return url.scheme, url.host, url.port


def check(url, policy, timeout, redirects, fetch=True, credentials=None,
          context=None):
    """Check image ``url`` (an :class:`imageurl.Url`); its size or None.

    Resolves every host of the redirect chain and applies ``policy``;
    with ``fetch``, asks the size with HEAD requests, following at most
    ``redirects`` redirects. All of it within ``timeout`` seconds.

    :param credentials: ``(username, password)`` for the image's origin.
    :param context: the ``ssl.SSLContext`` for https hops (as the import
        will trust them).
    :raises Refused: a host is denied, does not resolve, or the chain is
        longer than ``redirects``.
    :raises Unavailable: the size could not be asked (any other reason).
    """
    if not fetch:
        reason = imageurl.refusal(policy, url.host, url.port, [])
        if reason:
            raise Refused(reason)
        return None
    deadline = time.monotonic() + timeout
    first = url
    for hop in range(redirects + 1):
        addresses = resolve(url.host, url.port, deadline)
        reason = imageurl.refusal(policy, url.host, url.port, addresses)
        if reason:
            raise Refused(reason if hop == 0 else
                          'it redirects to a denied host: %s' % reason)
        authorization = _basic(*credentials) if credentials and \
            _origin(url) == _origin(first) else None
        status, location, length = head(url, addresses, deadline,
                                        authorization, context)
        if status in REDIRECTS and location:
            try:
                url = imageurl.parse(urlparse.urljoin(url.url, location))
            except imageurl.Invalid:
                raise Unavailable('redirect to an invalid URL') from None
            continue
        if status != 200:
            raise Unavailable('HEAD answered %s' % status)
        try:
            return int(length) if length and int(length) > 0 else None
        except ValueError:
            raise Unavailable('bad Content-Length') from None
    raise Refused('it redirects more than %d times' % redirects)
