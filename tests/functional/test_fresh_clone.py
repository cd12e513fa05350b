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

"""tox's environment on a fresh clone with nothing beside it.

tox.ini points every variable it sets at ``../shared``; a new user's clone
has no such folder. Whatever reads those variables must then run without
them (the simulator skips its schemas) or skip with a reason that names
the folder and the docs page.
"""

import configparser
import os

import pytest
from tests.functional.simulator import apitools

from sushy_kubevirt.bench import targets
from sushy_kubevirt.simulator import schemas

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def _tox_setenv(toxinidir):
    """``[testenv] setenv`` of tox.ini, as tox sets it in ``toxinidir``."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(os.path.join(REPO_ROOT, 'tox.ini'))
    pairs = {}
    for line in parser['testenv']['setenv'].splitlines():
        if '=' in line:
            name, value = line.strip().split('=', 1)
            pairs[name] = value.replace('{toxinidir}', toxinidir)
    return pairs


@pytest.fixture
def fresh_clone(tmp_path, monkeypatch):
    """The tox environment of a clone in an otherwise empty folder."""
    clone = tmp_path / 'clone'
    clone.mkdir()
    setenv = _tox_setenv(str(clone))
    # What makes this test mean anything: tox.ini reaches beside the clone.
    assert not os.path.isdir(setenv[schemas.ENV])
    for name, value in setenv.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv('CI', raising=False)
    return setenv


def test_bench_simulator_target_starts(fresh_clone, tmp_path):
    target = targets.make('simulator', 2, 1, str(tmp_path))
    try:
        marks = target.start()
        assert marks['total_s'] >= 0
        namespace, name = target.vm_name(1)
        assert target.get_vm(namespace, name)['metadata']['name'] == name
    finally:
        target.stop()


def test_schema_tests_skip_naming_folder_and_docs(fresh_clone):
    with pytest.raises(pytest.skip.Exception) as skipped:
        apitools.crd_schema_dir()
    reason = str(skipped.value)
    assert fresh_clone[schemas.ENV] in reason
    assert 'doc/source/simulator.rst' in reason
