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

"""A sushy-tools without one of the plugin's extension points: no start."""

import importlib.metadata

import pytest
from tests.functional.emulator import harness

_VERSION = importlib.metadata.version('sushy-tools')


def _broken_config(tmp_path, removal):
    path = tmp_path / 'broken.conf'
    config = harness.write_config(path)
    with open(config) as source:
        text = source.read()
    with open(config, 'w') as out:
        # Before the plugin's import, as a sushy-tools without it would be.
        out.write('from sushy_tools.emulator import main\n%s\n%s'
                  % (removal, text))
    return config


@pytest.mark.parametrize('mode', harness.MODES)
def test_a_missing_member_stops_every_launch_path(mode, tmp_path):
    config = _broken_config(
        tmp_path, 'del main.Application.render_template')
    process = harness.emulator_process(mode, config, tmp_path)
    assert process.start().wait_exit() != 0
    log = process.log()
    assert ('cannot extend sushy-tools %s: it lacks '
            'Application.render_template' % _VERSION) in log


def test_a_missing_endpoint_stops_sushy_emulator(tmp_path):
    # With --config the file runs after main.py defined its routes.
    config = _broken_config(
        tmp_path, "main.app.view_functions.pop('processor')")
    process = harness.emulator_process('sushy-emulator', config, tmp_path)
    assert process.start().wait_exit() != 0
    assert ('it lacks processor (GET /redfish/v1/Systems/<identity>/'
            'Processors/<processor_id>)') in process.log()
