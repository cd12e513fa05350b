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

"""The devserver mode serves every side on the console script's server."""

import os

import pytest
import requests

from sushy_kubevirt.bench import ceiling
from sushy_kubevirt.bench import emulators
from sushy_kubevirt.bench import procs
from sushy_kubevirt.bench import waitressed
from sushy_kubevirt import cli
from sushy_kubevirt import config


def test_settings_are_the_console_scripts_defaults():
    assert waitressed.THREADS == \
        config.load({}).events.sse_streams + cli.PLAIN_THREADS
    assert waitressed.REQUEST_TIMEOUT == cli.REQUEST_TIMEOUT


def _server(port):
    response = requests.get('http://127.0.0.1:%d/redfish/v1/Systems' % port,
                            timeout=30)
    assert response.status_code == 200
    return response.headers['Server']


@pytest.mark.timeout(120)
def test_fake_and_its_ceiling_run_on_waitress(tmp_path):
    port = procs.free_port()
    path = emulators.write_config(str(tmp_path / 'fake.conf'), port, 'fake',
                                  systems=2)
    fake = emulators.Emulator('devserver', 'fake', path, port,
                              str(tmp_path / 'fake.log'))
    try:
        fake.wait_ready()
        assert _server(port) == 'waitress'
        ids = [system['uuid'] for system in emulators.fake_systems(2)]
        limit = ceiling.start(fake, ids, str(tmp_path))
        try:
            assert _server(limit.port) == 'waitress'
        finally:
            limit.stop()
    finally:
        fake.stop()
    with open(os.path.join(tmp_path, 'fake.log')) as log:
        assert '"GET /redfish/v1/Systems HTTP/1.1" 200' in log.read()
