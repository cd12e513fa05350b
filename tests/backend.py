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

"""The cluster under the functional suites: the simulator or a real one.

``$SUSHY_KUBEVIRT_TEST_BACKEND`` chooses ``simulator`` (the default) or
``kube-apiserver`` (``tox -e realkube``: a real control plane with the
simulated KubeVirt and CDI, ``tests.realbackend``).
``start(**kwargs)`` takes ``Simulator``'s keyword arguments. On the real
backend the emulator's kubeconfig is its ServiceAccount's, under the
shipped RBAC only, and a test that needs what only the simulator has
(fault injection, its authorizer, its knobs) is skipped, naming it.
"""

import os
import secrets

import pytest
import requests

from sushy_kubevirt.simulator import Simulator

BACKEND = os.environ.get('SUSHY_KUBEVIRT_TEST_BACKEND', 'simulator')
#: ``kubevirt``: the real KubeVirt (virt-api, virt-controller) on it too,
#: with only the nodes simulated
REAL = BACKEND in ('kube-apiserver', 'kubevirt')
KUBEVIRT = BACKEND == 'kubevirt'
#: Simulator arguments a real control plane has too.
PORTABLE = {'vms', 'namespaces', 'time_scale', 'stage_delays',
            'guest_agent', 'crd_schemas', 'pvc_roots'}
#: Timing knobs of the simulator's API server that tests set to be quick;
#: kube-apiserver keeps its own (a bookmark a minute, watches of 30-60 min).
TIMINGS = {'bookmark_interval', 'min_request_timeout'}


def simulator_only(name):
    """``pytestmark`` of a module whose every test needs ``sim.<name>``.

    On a real backend the module is skipped before its cluster starts (a
    test reaching for ``sim.<name>`` skips only once the cluster is up).
    """
    if not REAL:
        return pytest.mark.skipif(False, reason='')
    from tests import realbackend
    return pytest.mark.skip(
        reason='needs %s' % realbackend.SIMULATOR_ONLY[name])


def start(**kwargs):
    """A started cluster of the chosen backend."""
    if not REAL:
        return Simulator(**kwargs).start()
    other = sorted(set(kwargs) - PORTABLE - TIMINGS)
    if other:
        pytest.skip('needs the simulator (%s)' % ', '.join(other))
    from tests import realbackend  # the control plane, only when used
    return realbackend.Real(
        kubevirt=KUBEVIRT,
        **{k: v for k, v in kwargs.items() if k in PORTABLE}).start()


def log_complete(sim):
    """Wait until ``sim.request_log`` holds the requests answered so far.

    A sentinel request, logged after them: the simulator logs a request
    before it answers; kube-apiserver writes an audit line as a request
    completes, so the sentinel goes as the emulator's user and its line
    is awaited.
    """
    if REAL:
        sim.emulator_get('/version')
    else:
        requests.get(sim.url + '/version', timeout=10, verify=sim.ca_file)
    sim.wait_for(lambda: sim.request_log.count(path='/version'), 5.0)


def write_admin_kubeconfig(sim, path):
    """A kubeconfig of a cluster administrator.

    Another user than the emulator, whose kubeconfig
    ``sim.write_kubeconfig`` writes on the real backend.
    """
    if REAL:
        return sim.write_admin_kubeconfig(path)
    return sim.write_kubeconfig(path)


def admin_request(sim, method, path, body=None):
    """One API call as the administrator: ``(status, decoded body)``."""
    if REAL:
        return sim.control_plane.request(method, path, body)
    answer = requests.request(method, sim.url + path, json=body, timeout=30,
                              verify=sim.ca_file,
                              headers={'Authorization': 'Bearer '
                                       + sim.token})
    return answer.status_code, answer.json() if answer.content else None


def allow_reviews(sim):
    """Let the emulator make TokenReviews and SubjectAccessReviews.

    On the real backend, binds the shipped ``kubernetes-accounts``
    component; the simulator lets the emulator do everything.
    """
    if REAL:
        from sushy_kubevirt.controlplane import rbac
        rbac.bind_reviews(sim.control_plane)


def service_account_token(sim, namespace, name):
    """A bearer token of ServiceAccount ``namespace/name``: ``(token, user)``.

    The API server's own on the real backend; on the simulator, a static
    token (which gets a ServiceAccount's groups there too).
    """
    user = 'system:serviceaccount:%s:%s' % (namespace, name)
    if REAL:
        return sim.control_plane.service_account_token(namespace, name), user
    token = secrets.token_urlsafe(24)
    sim.authz.add_token(token, user)
    return token, user
