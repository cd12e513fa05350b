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

"""Ports for servers: chosen now, listened on later, or again.

``bind(('127.0.0.1', 0))`` gives a port of the ephemeral range
(``ip_local_port_range``), the range outgoing connections take their
local port from. Any outgoing connection can take such a port in the
window before the server listens on it: the port is chosen here and
bound by another process (an emulator, etcd), or its server is down
for a restart. Even a client's connection to itself can take it (TCP
simultaneous open, which then reads its own TLS ClientHello, "wrong
version number"). The server then fails with ``Address already in
use``. So servers listen below that range, as kube-apiserver's 6443
does.
"""

import collections
import random
import socket
import threading

#: Linux's setting, and its default when it cannot be read.
_RANGE = '/proc/sys/net/ipv4/ip_local_port_range'
_EPHEMERAL_LOW = 32768
#: Ports tried before giving up.
TRIES = 100
#: The ports this process handed out lately: never handed out again, so
#: that two servers named before either listens cannot get the same one.
_GIVEN = collections.deque(maxlen=4096)
_GIVEN_LOCK = threading.Lock()


def _ephemeral_low():
    try:
        with open(_RANGE) as stream:
            return int(stream.read().split()[0])
    except (OSError, ValueError, IndexError):
        return _EPHEMERAL_LOW


def restartable(host):
    """A port on ``host`` below the ephemeral range, free a moment ago."""
    with reserved(host) as sock:
        return sock.getsockname()[1]


def reserved(host):
    """A socket bound to a port of :func:`restartable`'s, not listening.

    For a port that must be named long before its server starts: nothing
    else can bind it meanwhile; the server listens on this very socket.
    """
    high = _ephemeral_low()
    low = max(1024, high // 2)
    for _ in range(TRIES):
        port = random.randrange(low, high)
        with _GIVEN_LOCK:
            if port in _GIVEN:
                continue
            sock = socket.socket()
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            _GIVEN.append(port)
        return sock
    raise OSError('no free port on %s between %d and %d after %d tries'
                  % (host, low, high - 1, TRIES))
