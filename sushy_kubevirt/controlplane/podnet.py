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

"""A pod's network for a local process: its own loopback, two ways out.

CDI's cdi-controller and cdi-apiserver both listen on ``:8443``, every
address, a port fixed in their code: in a cluster each has a pod of its
own. Here each runs in a network namespace of its own (``unshare
--user --net``, no privilege needed), where that port is its own and
reaches nothing outside. Unix sockets in ``directory`` join it to the
host, whose loopback stays the only one in use:

* ``outbound`` ports: connections to 127.0.0.1:PORT inside go to the
  same port on the host's loopback (kube-apiserver);
* ``inbound`` ports: ``PodNetwork.ports[PORT]`` is a host loopback port
  whose connections reach PORT inside (the webhooks, an APIService).

``PodNetwork(...).start(argv, log_path)`` runs ``argv`` so; ``python -m
sushy_kubevirt.controlplane.podnet`` is its inside half.
"""

import argparse
import contextlib
import ctypes
import fcntl
import os
import pathlib
import signal
import socket
import struct
import subprocess
import sys
import threading

HOST = '127.0.0.1'
BUFFER = 65536


def pump(a, b):
    """Copy both ways between sockets ``a`` and ``b`` until both end."""
    def one_way(src, dst):
        with contextlib.suppress(OSError):
            while True:
                data = src.recv(BUFFER)
                if not data:
                    break
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
    other = threading.Thread(target=one_way, args=(b, a), daemon=True)
    other.start()
    one_way(a, b)
    other.join()
    a.close()
    b.close()


def forward(listener, connect):
    """Serve ``listener``: each connection is pumped to ``connect()``."""
    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                peer = connect()
            except OSError:
                conn.close()
                continue
            threading.Thread(target=pump, args=(conn, peer),
                             daemon=True).start()
    threading.Thread(target=serve, daemon=True,
                     name='podnet %s' % (listener.getsockname(),)).start()


def _tcp_listener(port=0):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((HOST, port))
    sock.listen(64)
    return sock


def _unix_listener(path):
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.listen(64)
    return sock


def _unix_connect(path):
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(path))
    return sock


class PodNetwork:
    """The host half: Unix sockets in ``directory`` and loopback ports."""

    def __init__(self, directory, *, outbound=(), inbound=(), mounts=None):
        self.directory = pathlib.Path(directory)
        self.outbound = tuple(outbound)
        self.inbound = tuple(inbound)
        #: {directory inside: host directory bound there}
        self.mounts = dict(mounts or {})
        #: {inside port: host loopback port reaching it}
        self.ports = {}
        self._listeners = []
        self.directory.mkdir(parents=True, exist_ok=True)
        for port in self.outbound:
            listener = _unix_listener(self.directory / ('out-%d' % port))
            forward(listener, lambda port=port: socket.create_connection(
                (HOST, port)))
            self._listeners.append(listener)
        for port in self.inbound:
            listener = _tcp_listener()
            path = self.directory / ('in-%d' % port)
            forward(listener, lambda path=path: _unix_connect(path))
            self.ports[port] = listener.getsockname()[1]
            self._listeners.append(listener)

    def start(self, argv, spawn):
        """Run ``argv`` inside, with ``spawn(argv)``; what it returns."""
        inside = [sys.executable, '-m', __name__, str(self.directory)]
        inside += ['--out=%d' % p for p in self.outbound]
        inside += ['--in=%d' % p for p in self.inbound]
        inside += ['--mount=%s=%s' % item for item in self.mounts.items()]
        return spawn(['unshare', '--user', '--map-root-user', '--net',
                      '--mount'] + inside + ['--'] + list(argv))

    def stop(self):
        for listener in self._listeners:
            listener.close()
        self._listeners = []


def _loopback_up():
    """``ip link set lo up``, as an ioctl (SIOCGIFFLAGS, SIOCSIFFLAGS)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        ifreq = struct.pack('16sH14s', b'lo', 0, b'')
        flags = struct.unpack('16sH14s', fcntl.ioctl(
            sock, 0x8913, ifreq))[1]
        fcntl.ioctl(sock, 0x8914, struct.pack('16sH14s', b'lo',
                                              flags | 0x1, b''))


def _bind(inside, host):
    """Bind ``host`` at ``inside``, made on a tmpfs where it is missing.

    The deepest existing directory above ``inside`` gets the tmpfs (it
    hides that directory's files in this mount namespace only).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    target = pathlib.Path(os.path.realpath(inside))
    if not target.is_dir():
        base = next(p for p in target.parents if p.is_dir())
        if base == pathlib.Path('/'):
            raise SystemExit('podnet: will not mount over /')
        if libc.mount(b'tmpfs', str(base).encode(), b'tmpfs', 0, None):
            raise OSError(ctypes.get_errno(), 'mount tmpfs on %s' % base)
        target.mkdir(parents=True, exist_ok=True)
    if libc.mount(str(host).encode(), str(target).encode(), None,
                  0x1000, None):   # MS_BIND
        raise OSError(ctypes.get_errno(), 'bind %s on %s' % (host, target))


def main(argv=None):
    """The inside half: bring up lo, join the sockets, run the command."""
    parser = argparse.ArgumentParser(prog='python -m ' + __name__)
    parser.add_argument('directory', type=pathlib.Path)
    parser.add_argument('--out', type=int, action='append', default=[])
    parser.add_argument('--in', dest='inbound', type=int, action='append',
                        default=[])
    parser.add_argument('--mount', action='append', default=[])
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index('--')
    args, command = parser.parse_args(argv[:split]), argv[split + 1:]
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    _loopback_up()
    for spec in args.mount:
        _bind(*spec.split('=', 1))
    for port in args.out:
        forward(_tcp_listener(port), lambda port=port: _unix_connect(
            args.directory / ('out-%d' % port)))
    for port in args.inbound:
        forward(_unix_listener(args.directory / ('in-%d' % port)),
                lambda port=port: socket.create_connection((HOST, port)))
    child = subprocess.Popen(command, preexec_fn=lambda: ctypes.CDLL(
        None).prctl(1, signal.SIGTERM))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _: child.send_signal(signum))
    sys.exit(child.wait())


if __name__ == '__main__':
    main()
