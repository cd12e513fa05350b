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

"""``sushy-kubevirt-emulator``: sushy-emulator with the KubeVirt drivers.

Accepts every ``sushy-emulator`` option, plus ``--simulate N``: start the
embedded Kubernetes + KubeVirt simulator with N VMs on a free loopback port
and point the KubeVirt drivers at it, so no cluster is needed (sessions and
the EventService on, what is served printed at start); and
``--shard-of SHARDS NAMESPACE...``: print which replica serves each
namespace when SHARDS replicas split them.

It serves with waitress, a requirement of the package, not Flask's
development server: waitress reads each request whole in its event loop
before a thread of its pool takes it, so a client that sends slowly holds
a socket, never a thread, and is cut off once its request is late
(``--request-timeout``; waitress's own timeout counts idle seconds only,
which a client sending a byte a second never reaches). It is pure Python
with no dependencies. It serves no TLS: a certificate is refused, for a
TLS proxy in front.
"""

import argparse
import importlib.metadata
import logging
import os
import resource
import signal
import sys
import tempfile
import time

from sushy_tools.emulator import main
from waitress import channel
from waitress import server

from sushy_kubevirt import config
from sushy_kubevirt.drivers import clusters
from sushy_kubevirt import plugin
from sushy_kubevirt.redfish import base
from sushy_kubevirt import simulator


PROG = 'sushy-kubevirt-emulator'
#: The demo's guests answer an ACPI shutdown within 3 s (the VMs' 180 s
#: grace period is only the bound for a guest that ignores it).
DEMO_STAGES = {'Shutdown': 3}
#: What the demo turns on in the simulator's namespace of its VMs: the
#: sessions and the EventService (a config file's own values win).
DEMO_DEFAULTS = {
    config.SESSION_NAMESPACE_KEY: 'default',
    config.EVENTS_PREFIX + 'NAMESPACE': 'default',
}
#: Seconds a request has to arrive whole, from its first byte, and a
#: connection may stay idle between requests.
REQUEST_TIMEOUT = 10
#: Threads beside those the Server-Sent Event streams may hold (one each,
#: for as long as a stream lasts).
PLAIN_THREADS = 16
#: Open connections at most (fewer when the process may open fewer
#: files); more wait in the listen backlog.
CONNECTION_LIMIT = 10000
#: Open files kept for the process's own use beside its connections.
FILES_KEPT = 100
NO_TLS = ('%s: serves plain HTTP; put a TLS proxy in front of it instead of '
          'giving it a certificate (SUSHY_EMULATOR_SSL_CERT, '
          '--ssl-certificate)' % PROG)
LOG = logging.getLogger('sushy_kubevirt.server')
_EPILOG = """\
The KubeVirt drivers are configured with SUSHY_EMULATOR_KUBEVIRT_* keys in
the file given with --config; a sample listing every key with its default
is installed as
  %s
(see also the configuration reference, doc/source/configuration.rst).
Every sushy-emulator option below is accepted as well."""


def sample_config():
    """Path of the sample config: installed, else the source tree's."""
    name = os.path.join('sushy-emulator', 'kubevirt.conf')
    installed = os.path.join(sys.prefix, 'share', 'sushy-kubevirt', name)
    source = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'etc', name)
    if os.path.isfile(installed) or not os.path.isfile(source):
        return installed
    return source


def version():
    """``sushy-kubevirt X (sushy-tools Y)``."""
    return 'sushy-kubevirt %s (sushy-tools %s)' % tuple(
        importlib.metadata.version(name)
        for name in ('sushy-kubevirt', 'sushy-tools'))


def _parser():
    parser = argparse.ArgumentParser(
        PROG, add_help=False, epilog=_EPILOG % sample_config(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description='sushy-emulator with the KubeVirt drivers of '
        'sushy-kubevirt.')
    parser.add_argument(
        '--simulate', type=int, metavar='N',
        help='serve N VMs of an embedded simulated Kubernetes + KubeVirt '
        'cluster on a free loopback port (no cluster needed)')
    parser.add_argument(
        '--shard-of', nargs='+', metavar=('SHARDS', 'NAMESPACE'),
        help='print the SUSHY_EMULATOR_KUBEVIRT_SHARD of the replica '
        'serving each NAMESPACE when SHARDS replicas split them, and exit')
    parser.add_argument(
        '--threads', type=int, metavar='N',
        help='threads serving requests (default: the EventService\'s '
        'SSE streams limit + %d)' % PLAIN_THREADS)
    parser.add_argument(
        '--request-timeout', type=int, metavar='SECONDS',
        default=REQUEST_TIMEOUT,
        help='seconds a request has to arrive whole, and a connection may '
        'stay idle, before it is closed (default: %(default)s)')
    parser.add_argument('--version', action='version', version=version())
    parser.add_argument('-h', '--help', action='store_true',
                        help='show this help and exit')
    return parser


def _parse(argv):
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.help:
        parser.print_help()
        print('\nsushy-emulator options:', flush=True)
        sys.argv = [PROG, '--help']
        main.parse_args()  # prints sushy-emulator's options and exits
    if args.simulate is not None and args.simulate < 0:
        parser.error('--simulate needs a number >= 0')
    if args.threads is not None and args.threads < 1:
        parser.error('--threads needs a number >= 1')
    if args.request_timeout < 1:
        parser.error('--request-timeout needs a number of seconds >= 1')
    if args.shard_of and not (len(args.shard_of) > 1 and
                              args.shard_of[0].isdigit() and
                              int(args.shard_of[0]) > 0):
        parser.error('--shard-of needs a number of shards >= 1, then '
                     'namespaces')
    return args, rest


def _print_shards(count, namespaces):
    for namespace in namespaces:
        print('%s %s' % (namespace, config.Shard(
            config.owner(namespace, count), count)))


def _banner(app, sim, kubeconfig, url):
    """Say what the demo serves."""
    items, _ = sim.store.list(
        sim.store.resource('kubevirt.io', 'virtualmachines'))
    vms = sorted('%s/%s' % (vm['metadata']['namespace'],
                            vm['metadata']['name']) for vm in items)
    events = app.config.get(config.EVENTS_PREFIX + 'NAMESPACE')
    lines = [
        'Redfish service: %s/redfish/v1' % url,
        'VMs (%d): %s' % (len(vms), ', '.join(vms[:5]) +
                          (', ...' if len(vms) > 5 else '')),
        'Sessions: %s/redfish/v1/SessionService/Sessions (Secrets in '
        'namespace %s)' % (url, app.config.get(
            config.SESSION_NAMESPACE_KEY, 'default')),
        'EventService: ' + ('%s/redfish/v1/EventService (namespace %s)'
                            % (url, events) if events else 'off'),
        'Simulated cluster: %s (kubeconfig %s)' % (sim.url, kubeconfig),
    ]
    print('\n'.join('%s: %s' % (PROG, line) for line in lines),
          file=sys.stderr, flush=True)


def _simulate(app, vms, workdir):
    """Start a simulator; make ``app`` use it whatever the config says.

    The drivers and the kubeconfig are forced; sessions and the
    EventService are turned on in the VMs' namespace unless the config
    file sets their namespaces.
    """
    sim = simulator.Simulator(vms=vms, stage_delays=DEMO_STAGES).start()
    kubeconfig = sim.write_kubeconfig(os.path.join(workdir, 'kubeconfig'))
    overrides = {
        config.SYSTEMS_DRIVER_KEY: 'kubevirt',
        config.VMEDIA_DRIVER_KEY: 'kubevirt',
        'SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG': kubeconfig,
    }
    configure, run = app.configure, app.run

    def configure_simulated(config_file=None, extra_config=None):
        configure(config_file=config_file,
                  extra_config=dict(extra_config or {}, **overrides))

    def run_simulated(host=None, port=None, ssl_context=None, **kwargs):
        _banner(app, sim, kubeconfig, '%s://%s:%s' % (
            'https' if ssl_context else 'http', host or '127.0.0.1',
            port or 5000))
        return run(host=host, port=port, ssl_context=ssl_context, **kwargs)

    app.configure = configure_simulated
    app.run = run_simulated
    # Under the config file: it is read after these (SUSHY_EMULATOR_CONFIG
    # before them, hence setdefault).
    for key, value in DEMO_DEFAULTS.items():
        app.config.setdefault(key, value)
    app.config.update(overrides)
    return sim


class _Channel(channel.HTTPChannel):
    """A connection; ``started``: when its unfinished request began."""

    started = 0.0

    def received(self, data):
        if self.request is None:
            self.started = time.time()
        return super().received(data)


class _Server(server.TcpWSGIServer):
    """waitress, closing the connections whose request is late."""

    channel_class = _Channel

    def __init__(self, application, request_timeout, **settings):
        self.request_timeout = request_timeout
        super().__init__(application, **settings)

    def maintenance(self, now):
        super().maintenance(now)   # the idle connections
        late = now - self.request_timeout
        for conn in self.active_channels.values():
            if conn.request is not None and conn.started < late and \
                    not conn.will_close:
                conn.will_close = True
                LOG.info('%s - - [%s] no whole request within %d s: '
                         'connection closed', conn.addr[0], _now(),
                         self.request_timeout)


def _now():
    return time.strftime('%d/%b/%Y %H:%M:%S')


def _printable(text):
    return text.encode('unicode_escape').decode('ascii')


def _access_log(app):
    """``app`` logging a line per answer, as Werkzeug's server did."""
    def logged(environ, start_response):
        def start(status, headers, exc_info=None):
            size = next((value for name, value in headers
                         if name.lower() == 'content-length'), '-')
            LOG.info('%s - - [%s] "%s %s %s" %s %s', environ['REMOTE_ADDR'],
                     _now(), _printable(environ['REQUEST_METHOD']),
                     _printable(environ['REQUEST_URI']),
                     environ['SERVER_PROTOCOL'], status.split(' ', 1)[0],
                     size)
            return start_response(status, headers, exc_info)
        return app(environ, start)
    return logged


def _connection_limit():
    """CONNECTION_LIMIT, or less if the process may open fewer files.

    The soft limit of open files is raised for it, up to the hard one.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = CONNECTION_LIMIT + FILES_KEPT
    if soft != resource.RLIM_INFINITY and soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return max(1, min(CONNECTION_LIMIT, soft - FILES_KEPT))


def _serve_with_waitress(app, args):
    """Make ``app.run`` check the plugin's points, then serve (waitress)."""
    def run(host=None, port=None, ssl_context=None, **kwargs):
        if ssl_context is not None:
            raise SystemExit(NO_TLS)
        plugin.check_before_serving(app)
        threads = args.threads or (
            config.load(app.config).events.sse_streams + PLAIN_THREADS)
        if not LOG.handlers and not logging.root.handlers:
            LOG.addHandler(logging.StreamHandler())
            LOG.setLevel(logging.INFO)
        httpd = _Server(
            _access_log(app), args.request_timeout,
            host=host or '127.0.0.1', port=port or 5000, threads=threads,
            channel_timeout=args.request_timeout, cleanup_interval=1,
            connection_limit=_connection_limit(), asyncore_use_poll=True,
            # The application's own 413 answers the first byte too many
            # (waitress refuses from this size on, before reading).
            max_request_body_size=base.MAX_BODY + 2,
            # The application decides whom to trust (TRUSTED_PROXIES).
            clear_untrusted_proxy_headers=False)
        print('%s: serving on http://%s:%s (%d threads, requests within '
              '%d s)' % (PROG, httpd.effective_host, httpd.effective_port,
                         threads, args.request_timeout),
              file=sys.stderr, flush=True)
        httpd.run()
    app.run = run


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def run(argv=None):
    """Run sushy-emulator with the plugin (and maybe a simulator)."""
    plugin.install()   # done by the import; named here for the reader
    argv = sys.argv[1:] if argv is None else argv
    args, rest = _parse(argv)
    if args.shard_of:
        return _print_shards(int(args.shard_of[0]), args.shard_of[1:])
    sys.argv = [sys.argv[0]] + rest
    # SIGTERM ends the process as an exception does: exit handlers run
    # (the EventService releases its Lease for the next sender).
    signal.signal(signal.SIGTERM, _terminate)
    _serve_with_waitress(main.app, args)
    if args.simulate is None:
        return main.main()
    with tempfile.TemporaryDirectory(prefix='sushy-kubevirt-') as workdir:
        sim = _simulate(main.app, args.simulate, workdir)
        try:
            return main.main()
        finally:
            clusters.stop()
            sim.stop()


if __name__ == '__main__':
    sys.exit(run())
