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

"""``sushy-kubevirt-simulator``: serve a simulated cluster, or control one.

Also ``python -m sushy_kubevirt.simulator``.

``sushy-kubevirt-simulator --kubeconfig PATH [options]`` serves; ``...
fault --url URL --token TOKEN COMMAND`` talks to a running simulator's
control API (``control``). Serving ends the process once the simulator
stopped (``exit_now``).
"""

import argparse
import importlib.metadata
import json
import logging
import os
import signal
import sys
import threading
import urllib.error
import urllib.request

from sushy_kubevirt import simulator
from sushy_kubevirt.simulator import control
from sushy_kubevirt.simulator import faults
from sushy_kubevirt.simulator import schemas

PROG = 'sushy-kubevirt-simulator'
CONTROL_PLANES = ('simulator', 'kube-apiserver', 'kubevirt')
#: Options of the simulated API server alone.
SIMULATED_ONLY = ('host', 'field_validation', 'latency_ms', 'max_qps',
                  'max_inflight', 'history_size', 'bookmark_interval',
                  'min_request_timeout', 'token', 'plain_http')


def _stage_delays(text):
    """``stage=seconds,...`` -> dict (e.g. ``scheduling=0.5,running=1``)."""
    delays = {}
    for item in filter(None, text.split(',')):
        stage, sep, seconds = item.partition('=')
        try:
            delays[stage.strip()] = float(seconds)
        except ValueError:
            sep = ''
        if not sep or not stage.strip():
            raise argparse.ArgumentTypeError(
                'expected stage=seconds[,stage=seconds...], got %r' % item)
    return delays


def serve_parser():
    parser = argparse.ArgumentParser(
        prog=PROG,
        description='Serve a simulated Kubernetes + KubeVirt + CDI API on '
        'loopback until SIGINT/SIGTERM. "%s fault --help" controls a '
        'running one.' % PROG)
    parser.add_argument('--control-plane', choices=CONTROL_PLANES,
                        default='simulator',
                        help='"simulator" (the default): the simulated API '
                        'server; "kube-apiserver": a real etcd, '
                        'kube-apiserver and kube-controller-manager on '
                        'loopback (built with Go on first use), with the '
                        "simulator's KubeVirt and CDI as external "
                        'controllers; needs --crd-schemas; "kubevirt": '
                        'that control plane with the real KubeVirt '
                        '(virt-api, virt-controller) and CDI '
                        '(cdi-apiserver, cdi-controller), built from their '
                        'release sources ($SUSHY_KUBEVIRT_UPSTREAM), and '
                        'only the nodes simulated')
    parser.add_argument('--emulator-kubeconfig', metavar='PATH',
                        help='with a real --control-plane: also '
                        "write a kubeconfig of the emulator's "
                        'ServiceAccount under the shipped RBAC (default: '
                        'the --kubeconfig path plus ".emulator")')
    parser.add_argument('--vms', type=int, default=0,
                        help='number of VirtualMachines to create')
    parser.add_argument('--namespaces', type=int, default=1,
                        help='spread the VMs over this many namespaces')
    parser.add_argument('--pvc-roots', action='store_true',
                        help="give each VM's root disk a "
                        'persistentVolumeClaim volume (PVC <vm>-root, '
                        '10Gi) instead of a DataVolume')
    parser.add_argument('--kubeconfig', required=True,
                        help='path of the kubeconfig to write')
    parser.add_argument('--host', default='127.0.0.1',
                        help='listening address (default 127.0.0.1)')
    parser.add_argument('--port', type=int, default=0,
                        help='listening port (default: a free one)')
    parser.add_argument('--plain-http', action='store_true',
                        help='serve plain HTTP instead of HTTPS (the '
                        'default: a CA made at start, written into the '
                        'kubeconfig); kubectl sends no token over it')
    parser.add_argument('--control-port', type=int, default=0,
                        help='port of the fault control API (default: a '
                        'free one; printed at start)')
    parser.add_argument('--crd-schemas', default=None, metavar='DIR',
                        help='directory of CRD schema files: validate and '
                        'prune VMs, VMIs and DataVolumes (default $%s; '
                        'without one nothing is validated)' % schemas.ENV)
    parser.add_argument('--field-validation', choices=schemas.DIRECTIVES,
                        default=schemas.DEFAULT_DIRECTIVE,
                        help='fieldValidation of requests that send none '
                        '(default Warn, as kube-apiserver)')
    parser.add_argument('--latency-ms', type=float, default=0,
                        help='delay added to every request')
    parser.add_argument('--max-qps', type=float, default=None,
                        help='answer 429 above this request rate')
    parser.add_argument('--max-inflight', type=int, default=None,
                        help='answer 429 above this many concurrent '
                        'non-watch requests')
    parser.add_argument('--stage-delays', type=_stage_delays, default=None,
                        help='VMI phase delays, stage=seconds,...')
    parser.add_argument('--guest-agent', action='store_true',
                        help='guests run a guest agent (VMIs get '
                        'AgentConnected) unless their template says no')
    parser.add_argument('--time-scale', type=float, default=1.0,
                        help='simulated seconds per real second')
    parser.add_argument('--history-size', type=int, default=10_000,
                        help='watch history window (events)')
    parser.add_argument('--bookmark-interval', type=float, default=60.0,
                        help='seconds between watch BOOKMARK events')
    parser.add_argument('--min-request-timeout', type=float, default=1800.0,
                        help='watches without timeoutSeconds end after '
                        'this many seconds times a random 1-2')
    parser.add_argument('--token', default=simulator.ADMIN_TOKEN,
                        help='the admin bearer token (kubeconfig and '
                        'control API)')
    parser.add_argument('--debug', action='store_true',
                        help='log every request')
    parser.add_argument('--version', action='version', version='%s %s' % (
        PROG, importlib.metadata.version('sushy-kubevirt')))
    return parser


def parse_args(argv):
    return serve_parser().parse_args(argv)


def fault_parser():
    parser = argparse.ArgumentParser(
        prog=PROG + ' fault',
        description='Change a running simulator through its control API.')
    parser.add_argument('--url', required=True,
                        help='the control URL the simulator printed')
    parser.add_argument('--token', default=simulator.ADMIN_TOKEN,
                        help="the simulator's token")
    commands = parser.add_subparsers(dest='command', required=True,
                                     help='what to do')
    add = commands.add_parser(
        'add', help='arm a fault rule; prints it with its id',
        description='Actions and their parameters: %s.' % '; '.join(
            '%s (%s)' % (action, ', '.join(req + opt))
            for action, (req, opt) in sorted(faults.ACTIONS.items())))
    add.add_argument('action', choices=sorted(faults.ACTIONS))
    add.add_argument('--method', help='match this HTTP method')
    add.add_argument('--path', help='match paths with this regex')
    add.add_argument('--times', type=_times, default=argparse.SUPPRESS,
                     help='fire this many times, or "forever" (default 1; '
                     'latency: forever)')
    add.add_argument('--param', action='append', default=[],
                     metavar='KEY=VALUE',
                     help='an action parameter, VALUE as JSON if it parses '
                     '(e.g. code=503, seconds=2.5, message=boom)')
    remove = commands.add_parser('remove', help='disarm one rule')
    remove.add_argument('id')
    commands.add_parser('list', help='print the armed rules')
    commands.add_parser('clear', help='disarm every rule')
    restart = commands.add_parser(
        'restart-api', help='cut every connection and watch; refuse '
        'connections for --down seconds')
    restart.add_argument('--down', type=float, default=0.0)
    commands.add_parser('compact', help='drop the watch history')
    forbid = commands.add_parser('forbid-namespace',
                                 help='answer 403 to every request in NS')
    forbid.add_argument('namespace')
    allow = commands.add_parser('allow-namespace',
                                help='undo forbid-namespace')
    allow.add_argument('namespace')
    return parser


def _times(text):
    if text == 'forever':
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            'expected a positive integer or "forever", got %r' % text)
    return value


def _param(text):
    key, sep, value = text.partition('=')
    if not sep or not key:
        raise SystemExit('%s fault: --param expects KEY=VALUE, got %r'
                         % (PROG, text))
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def fault_request(args):
    """``(method, path, body)`` for a parsed fault command."""
    if args.command == 'add':
        body = dict(_param(p) for p in args.param)
        body['action'] = args.action
        for key in ('method', 'path'):
            if getattr(args, key):
                body[key] = getattr(args, key)
        if hasattr(args, 'times'):
            body['times'] = args.times
        return 'POST', '/faults', body
    if args.command == 'remove':
        return 'DELETE', '/faults/' + args.id, None
    if args.command == 'list':
        return 'GET', '/faults', None
    if args.command == 'clear':
        return 'DELETE', '/faults', None
    if args.command == 'restart-api':
        return 'POST', '/restart-api', {'down_seconds': args.down}
    if args.command == 'compact':
        return 'POST', '/compact', None
    verb = 'forbid' if args.command == 'forbid-namespace' else 'allow'
    return 'POST', '/namespaces/%s/%s' % (args.namespace, verb), None


def fault_main(argv):
    args = fault_parser().parse_args(argv)
    method, path, body = fault_request(args)
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        args.url.rstrip('/') + path, data=data, method=method,
        headers={'Authorization': 'Bearer ' + args.token,
                 'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            print(response.read().decode())
            return 0
    except urllib.error.HTTPError as exc:
        print('%s fault: %d %s' % (PROG, exc.code, exc.read().decode()),
              file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print('%s fault: cannot reach %s: %s'
              % (PROG, args.url, getattr(exc, 'reason', exc)),
              file=sys.stderr)
        return 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['fault']:
        return fault_main(argv[1:])
    parser = serve_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format='%(asctime)s %(levelname)s %(name)s '
                        '%(message)s')
    if args.control_plane != 'simulator':
        return _serve_real(parser, args)
    try:
        sim = _simulator(args)
    except ValueError as exc:
        parser.error(str(exc))
    stopping = _stopping()
    sim.start()
    try:
        path = sim.write_kubeconfig(args.kubeconfig)
        control_url = sim.start_control(args.control_port)
        print('simulator listening on %s (%d VMs, kubeconfig %s, control '
              '%s)' % (sim.url, args.vms, path, control_url), flush=True)
        while not stopping.wait(0.5):
            pass
    finally:
        sim.stop()
    exit_now(0)


def exit_now(code):
    """End the process at once, once the simulator has stopped.

    Tearing down the heap of 100,000 VMs object by object takes longer
    than the stop itself; the operating system frees it in one go.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _stopping():
    """An Event set by SIGINT or SIGTERM."""
    stopping = threading.Event()

    def on_signal(signum, frame):
        stopping.set()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stopping


def _serve_real(parser, args):
    defaults = serve_parser().parse_args(['--kubeconfig', '-'])
    given = ['--' + key.replace('_', '-') for key in SIMULATED_ONLY
             if getattr(args, key) != getattr(defaults, key)]
    if given:
        parser.error('%s: only for the simulated API server, not '
                     '--control-plane %s' % (', '.join(given),
                                             args.control_plane))
    # Imported here: the control plane needs the [controlplane] extra.
    from sushy_kubevirt.controlplane import build
    from sushy_kubevirt.simulator import realcluster
    cluster = realcluster.RealCluster(
        vms=args.vms, namespaces=args.namespaces,
        time_scale=args.time_scale, stage_delays=args.stage_delays,
        guest_agent=args.guest_agent, crd_schemas=args.crd_schemas,
        port=args.port or None, pvc_roots=args.pvc_roots,
        kubevirt=args.control_plane == 'kubevirt')
    stopping = _stopping()
    try:
        cluster.start()
    except (ValueError, build.BuildError) as exc:
        cluster.stop()
        parser.error(str(exc))
    try:
        admin = cluster.write_admin_kubeconfig(args.kubeconfig)
        emulator = cluster.write_kubeconfig(
            args.emulator_kubeconfig or args.kubeconfig + '.emulator')
        server = control.ControlServer(realcluster.ControlTarget(cluster),
                                       port=args.control_port).start()
        print('kube-apiserver listening on %s (%s, %d VMs, kubeconfig %s, '
              'emulator kubeconfig %s, control %s, token %s)'
              % (cluster.url, 'KubeVirt and CDI real, nodes simulated'
                 if cluster.kubevirt else 'KubeVirt and CDI simulated',
                 args.vms, admin, emulator, server.url, cluster.token),
              flush=True)
        try:
            while not stopping.wait(0.5):
                pass
        finally:
            server.stop()
    finally:
        cluster.stop()
    return 0


def _simulator(args):
    return simulator.Simulator(
        host=args.host, port=args.port, vms=args.vms,
        namespaces=args.namespaces, time_scale=args.time_scale,
        stage_delays=args.stage_delays, latency_ms=args.latency_ms,
        max_qps=args.max_qps, max_inflight=args.max_inflight,
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        min_request_timeout=args.min_request_timeout, token=args.token,
        guest_agent=args.guest_agent, crd_schemas=args.crd_schemas,
        field_validation=args.field_validation, tls=not args.plain_http,
        pvc_roots=args.pvc_roots)
