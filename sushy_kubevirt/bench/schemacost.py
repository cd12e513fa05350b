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

"""The simulator's cost of CRD schema validation on the write path.

``python -m sushy_kubevirt.bench.schemacost --crd-schemas DIR``: seeds
two simulators with the same VMs (with DataVolumes), one validating
against the schemas and one not, then sends the same JSON patches to
both, interleaved (side by side, same conditions). Prints the seeding
times and PATCH p50/p95, and exits 1 when the validated PATCH p50 is more
than ``--max-ratio`` times the unvalidated one.
"""

import argparse
import http.client
import json
import statistics
import sys
import time

from sushy_kubevirt.simulator import schemas
from sushy_kubevirt.simulator import Simulator

PATH = '/apis/kubevirt.io/v1/namespaces/default/virtualmachines/vm-%05d'


def seeded(vms, crd_schemas):
    """A started simulator with ``vms`` VMs and the seconds it took."""
    started = time.perf_counter()
    sim = Simulator(vms=vms, crd_schemas=crd_schemas, history_size=1000,
                    tls=False)
    sim.start()
    return sim, time.perf_counter() - started


def patch_once(conn, token, index, cores):
    body = json.dumps([{'op': 'replace', 'path':
                        '/spec/template/spec/domain/cpu/cores',
                        'value': cores}])
    started = time.perf_counter()
    conn.request('PATCH', PATH % index, body=body, headers={
        'Authorization': 'Bearer ' + token,
        'Content-Type': 'application/json-patch+json'})
    response = conn.getresponse()
    response.read()
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError('PATCH answered %d' % response.status)
    return elapsed


def measure(vms, patches, crd_schemas):
    plain, plain_seed = seeded(vms, None)
    valid, valid_seed = seeded(vms, crd_schemas)
    try:
        conns = {name: http.client.HTTPConnection(sim.host, sim.port,
                                                  timeout=30)
                 for name, sim in (('plain', plain), ('valid', valid))}
        times = {'plain': [], 'valid': []}
        for i in range(patches):
            index = (i * 7919) % vms  # spread over the VMs
            order = ('plain', 'valid') if i % 2 else ('valid', 'plain')
            for name in order:
                sim = plain if name == 'plain' else valid
                times[name].append(patch_once(conns[name], sim.token, index,
                                              1 + i % 8))
        for conn in conns.values():
            conn.close()
    finally:
        plain.stop()
        valid.stop()
    result = {'vms': vms, 'patches': patches,
              'seed_s': {'plain': plain_seed, 'valid': valid_seed}}
    for name, values in times.items():
        values.sort()
        result['patch_ms_' + name] = {
            'p50': 1000 * statistics.median(values),
            'p95': 1000 * values[int(0.95 * (len(values) - 1))]}
    result['p50_ratio'] = (result['patch_ms_valid']['p50']
                           / result['patch_ms_plain']['p50'])
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.bench.schemacost',
        description=__doc__.splitlines()[0])
    parser.add_argument('--crd-schemas', required=True, metavar='DIR',
                        help='the CRD schema directory ($%s)' % schemas.ENV)
    parser.add_argument('--vms', type=int, default=10_000,
                        help='VMs seeded in each simulator')
    parser.add_argument('--patches', type=int, default=500,
                        help='JSON patches sent to each simulator')
    parser.add_argument('--max-ratio', type=float, default=2.0,
                        help='fail above this validated/plain PATCH p50')
    args = parser.parse_args(argv)
    result = measure(args.vms, args.patches, args.crd_schemas)
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0 if result['p50_ratio'] <= args.max_ratio else 1


if __name__ == '__main__':
    sys.exit(main())
