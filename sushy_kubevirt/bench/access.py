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

"""What authentication and authorization cost a warm System GET.

``python -m sushy_kubevirt.bench.access``: one in-process simulator
(two namespaces), and the emulator's Flask app configured in turn for
each way of deciding access, every request ``GET /redfish/v1/Systems/
{id}`` of a System the user reaches, through Flask's test client (no
sockets: the emulator's own work only):

* ``none``: no authentication;
* ``basic``: HTTP Basic against an htpasswd file (bcrypt, cost 5 as
  ``htpasswd -B`` makes);
* ``session``: the same user's session token (``X-Auth-Token``), logged
  in once per turn;
* ``accounts file``: the same, with an accounts file (an Operator of
  one namespace);
* ``kubernetes``: a bearer token, decided by the cluster's RBAC, its
  answers cached (the default 10 s);
* ``kubernetes, ttl 0``: the same, every question asked.

Modes take turns for ``--rounds`` rounds; each reports its least CPU
milliseconds per request (the machine's other tenants only add to it)
and its exact Kubernetes API calls per request. Exits 1 when a mode
makes other calls than :data:`CALLS` says.
"""

import argparse
import base64
import json
import os
import secrets
import sys
import tempfile
import time

import bcrypt
from sushy_tools.emulator import main as emulator

from sushy_kubevirt import files
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import Simulator

#: The emulator's config before any of ours.
_STOCK = dict(emulator.app.config)
RBAC = 'rbac.authorization.k8s.io'
NAMESPACE = 'ns-000'
PASSWORD = 'bench-password'
#: The "header" of the session mode: a session token, logged in per turn.
SESSION = 'session'
SESSIONS = '/redfish/v1/SessionService/Sessions'
#: mode -> the API calls each warm GET makes.
CALLS = {'none': {}, 'basic': {}, 'session': {}, 'accounts file': {},
         'kubernetes': {},
         'kubernetes, ttl 0': {'create tokenreviews': 1,
                               'create subjectaccessreviews': 2}}


def _rbac(sim, user):
    store = sim.store
    store.create(store.resource(RBAC, 'roles'), {
        'apiVersion': RBAC + '/v1', 'kind': 'Role',
        'metadata': {'name': 'bench', 'namespace': NAMESPACE},
        'rules': [{'apiGroups': ['kubevirt.io'],
                   'resources': ['virtualmachines'],
                   'verbs': ['get', 'list']}]})
    store.create(store.resource(RBAC, 'rolebindings'), {
        'apiVersion': RBAC + '/v1', 'kind': 'RoleBinding',
        'metadata': {'name': 'bench', 'namespace': NAMESPACE},
        'roleRef': {'apiGroup': RBAC, 'kind': 'Role', 'name': 'bench'},
        'subjects': [{'kind': 'User', 'name': user, 'apiGroup': RBAC}]})


def _configs(sim, tmp):
    """mode -> (config file, Authorization header)."""
    htpasswd = os.path.join(tmp, 'htpasswd')
    files.replace(htpasswd, 'operator:%s\n' % bcrypt.hashpw(
        PASSWORD.encode(), bcrypt.gensalt(5)).decode(), 0o600)
    accounts = os.path.join(tmp, 'accounts.yaml')
    files.replace(accounts, 'accounts:\n  operator: {role: Operator, '
                  'namespaces: [%s]}\n' % NAMESPACE)
    token = secrets.token_urlsafe(24)
    user = 'system:serviceaccount:%s:bench' % NAMESPACE
    sim.authz.add_token(token, user)
    _rbac(sim, user)
    kubeconfig = sim.write_kubeconfig(os.path.join(tmp, 'kubeconfig'))
    basic = 'Basic ' + base64.b64encode(
        ('operator:' + PASSWORD).encode()).decode()
    bearer = 'Basic ' + base64.b64encode(('bench:' + token).encode()).decode()
    kube = {'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE': 'kubernetes'}
    modes = {
        'none': ({}, None),
        'basic': ({'SUSHY_EMULATOR_AUTH_FILE': htpasswd}, basic),
        'session': ({'SUSHY_EMULATOR_AUTH_FILE': htpasswd}, SESSION),
        'accounts file': ({'SUSHY_EMULATOR_AUTH_FILE': htpasswd,
                           'SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_FILE':
                               accounts}, basic),
        'kubernetes': (kube, bearer),
        'kubernetes, ttl 0': (dict(
            kube, SUSHY_EMULATOR_KUBEVIRT_ACCESS_CACHE_TTL=0), bearer),
    }
    result = {}
    for number, (mode, (settings, header)) in enumerate(modes.items()):
        path = os.path.join(tmp, 'emulator-%d.conf' % number)
        settings = dict(settings, SUSHY_EMULATOR_STATE_DIR=tmp,
                        SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG=kubeconfig,
                        SUSHY_EMULATOR_KUBEVIRT_ACCOUNT_LOCKOUT_THRESHOLD=0,
                        SUSHY_EMULATOR_SYSTEMS_DRIVER='kubevirt')
        files.replace(path, 'import sushy_kubevirt.plugin  # noqa\n' + ''.join(
            '%s = %r\n' % item for item in sorted(settings.items())))
        result[mode] = (path, header)
    return result


def _calls(sim):
    counts = {}
    for entry in sim.request_log.entries():
        if entry.get('verb') != 'watch':
            key = '%s %s' % (entry['verb'], entry['resource'])
            counts[key] = counts.get(key, 0) + 1
    return counts


def _run(app, sim, config, header, path, requests):
    """``(CPU s per request, {call: count per request})`` of one turn."""
    app.config.clear()
    app.config.update(_STOCK)
    app._cache = {}
    app.configure(config_file=config)
    client = app.test_client()
    if header == SESSION:
        login = client.post(SESSIONS, json={'UserName': 'operator',
                                            'Password': PASSWORD})
        if login.status_code != 201:
            raise RuntimeError('login answered %d' % login.status_code)
        headers = {'X-Auth-Token': login.headers['X-Auth-Token']}
    else:
        headers = {'Authorization': header} if header else {}
    deadline = time.monotonic() + 30
    while client.get(path, headers=headers).status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError('%s never answered 200' % path)
        time.sleep(0.05)
    # A type whose informer has not synced yet (the VMIs may sync after
    # the VMs) is read live.
    if not app.systems.cluster.wait_for_sync(30):
        raise RuntimeError('the watch caches never synced')
    client.get(path, headers=headers)
    sim.request_log.clear()
    started = time.process_time()
    for _ in range(requests):
        client.get(path, headers=headers)
    cpu = (time.process_time() - started) / requests
    return cpu, {k: v / requests for k, v in _calls(sim).items()}


def measure(vms, requests, rounds):
    """The figures of every mode, as a JSON-ready dict."""
    sim = Simulator(vms=vms, namespaces=2, tls=False)
    sim.start()
    tmp = tempfile.mkdtemp(prefix='sushy-kubevirt-access-')
    try:
        configs = _configs(sim, tmp)
        vm = sim.store.list(sim.store.resource('kubevirt.io',
                                               'virtualmachines'),
                            NAMESPACE)[0][0]
        path = '/redfish/v1/Systems/' + identity.firmware_uuid(vm)
        cpu = {mode: [] for mode in configs}
        calls = {}
        for turn in range(rounds):
            order = list(configs) if turn % 2 == 0 else list(configs)[::-1]
            for mode in order:
                spent, made = _run(emulator.app, sim, *configs[mode],
                                   path, requests)
                cpu[mode].append(spent)
                calls[mode] = made
    finally:
        sim.stop()
    base = min(cpu['none'])
    return {'vms': vms, 'requests': requests, 'rounds': rounds,
            'modes': {mode: {'cpu_ms': round(min(cpu[mode]) * 1000, 3),
                             'ratio': round(min(cpu[mode]) / base, 2),
                             'calls_per_request': calls[mode]}
                      for mode in cpu}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--vms', type=int, default=100)
    parser.add_argument('--requests', type=int, default=500)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--output', default=None,
                        help='also write the figures there (JSON)')
    args = parser.parse_args(argv)
    figures = measure(args.vms, args.requests, args.rounds)
    print('%-18s %8s %6s  %s' % (
        'mode', 'CPU ms', 'ratio', 'API calls per request'))
    wrong = []
    for mode, row in figures['modes'].items():
        print('%-18s %8.3f %6.2f  %s' % (
            mode, row['cpu_ms'], row['ratio'],
            json.dumps(row['calls_per_request'])))
        if row['calls_per_request'] != CALLS[mode]:
            wrong.append(mode)
    if args.output:
        files.replace(args.output, json.dumps(figures, indent=1))
    if wrong:
        print('unexpected API calls: %s' % ', '.join(wrong))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
