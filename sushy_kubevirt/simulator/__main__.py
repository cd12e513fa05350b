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

"""``python -m sushy_kubevirt.simulator``: serve a simulated cluster."""

import argparse
import logging
import signal
import sys
import threading

from sushy_kubevirt import simulator


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


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.simulator',
        description='Serve a simulated Kubernetes + KubeVirt + CDI API.')
    parser.add_argument('--vms', type=int, default=0,
                        help='number of VirtualMachines to create')
    parser.add_argument('--namespaces', type=int, default=1,
                        help='spread the VMs over this many namespaces')
    parser.add_argument('--kubeconfig', required=True,
                        help='path of the kubeconfig to write')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0,
                        help='listening port (default: a free one)')
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
    parser.add_argument('--bookmark-interval', type=float, default=60.0)
    parser.add_argument('--min-request-timeout', type=float, default=1800.0)
    parser.add_argument('--token', default=simulator.ADMIN_TOKEN)
    parser.add_argument('--debug', action='store_true')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO,
                        format='%(asctime)s %(levelname)s %(name)s '
                        '%(message)s')
    sim = simulator.Simulator(
        host=args.host, port=args.port, vms=args.vms,
        namespaces=args.namespaces, time_scale=args.time_scale,
        stage_delays=args.stage_delays, latency_ms=args.latency_ms,
        max_qps=args.max_qps, max_inflight=args.max_inflight,
        history_size=args.history_size,
        bookmark_interval=args.bookmark_interval,
        min_request_timeout=args.min_request_timeout, token=args.token,
        guest_agent=args.guest_agent)
    stopping = threading.Event()

    def on_signal(signum, frame):
        stopping.set()
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    sim.start()
    try:
        path = sim.write_kubeconfig(args.kubeconfig)
        print('simulator listening on %s (%d VMs, kubeconfig %s)'
              % (sim.url, args.vms, path), flush=True)
        while not stopping.wait(0.5):
            pass
    finally:
        sim.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
