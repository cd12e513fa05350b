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

"""Fixtures: one simulator and one real control plane for the session,
and the report of every difference at the end of the run."""

import os

import pytest
from tests.differential import backends
from tests.differential import differences
from tests.functional.simulator import apitools

from sushy_kubevirt.controlplane import build
from sushy_kubevirt.controlplane import server


def _fail_or_skip(reason):
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope='session')
def servers():
    """Started backends by name, each started on first use."""
    started, broken = {}, {}
    yield started, broken
    for backend in started.values():
        backend.stop()


@pytest.fixture
def backend(request, servers):
    name = request.param
    started, broken = servers
    if name in broken:
        _fail_or_skip(broken[name])
    if name not in started:
        schemas = apitools.crd_schema_dir()
        cls = {'simulator': backends.SimulatorBackend,
               'kube': backends.KubeBackend}[name]
        try:
            started[name] = cls(schemas)
        except (build.BuildError, server.ControlPlaneError) as exc:
            broken[name] = 'no real kube-apiserver: %s' % exc
            _fail_or_skip(broken[name])
    return started[name]


def pytest_terminal_summary(terminalreporter):
    differences.REPORT.summary(terminalreporter)
