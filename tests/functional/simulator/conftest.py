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

"""Fixtures: a running simulator and an official-client ApiClient.

``simulator`` accepts keyword overrides through a marker, e.g.
``pytestmark = pytest.mark.simulator(install=False, history_size=5)``.
Test-sized defaults: history 50 events, bookmarks every 0.2 s, watch
default timeout 1-2 s, TooLarge wait 0.5 s.
"""

from kubernetes import client
from kubernetes import config
import pytest
from tests.functional.simulator import apitools

from sushy_kubevirt.simulator import Simulator


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'simulator(**kwargs): Simulator() keyword overrides')


@pytest.fixture
def simulator(request):
    marker = request.node.get_closest_marker('simulator')
    kwargs = dict(apitools.DEFAULTS, **(marker.kwargs if marker else {}))
    sim = Simulator(**kwargs)
    sim.register(apitools.WIDGETS)
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def kubeconfig(simulator, tmp_path):
    return simulator.write_kubeconfig(str(tmp_path / 'kubeconfig'))


@pytest.fixture
def kube_client(kubeconfig):
    api_client = config.new_client_from_config(config_file=kubeconfig)
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def custom(kube_client):
    return client.CustomObjectsApi(kube_client)
