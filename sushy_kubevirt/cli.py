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
"""

import argparse
import importlib.metadata
import os
import signal
import sys
import tempfile

from sushy_tools.emulator import main

from sushy_kubevirt import config
from sushy_kubevirt.drivers import clusters
from sushy_kubevirt import plugin
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
        # The reloader would re-run this process (and a second simulator).
        kwargs.setdefault('use_reloader', False)
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
