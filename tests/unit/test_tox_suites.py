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

"""The real-backend envs of tox.ini split the suites with nothing lost.

``realkube`` leaves out by ``--ignore`` what ``kubevirt`` runs instead:
a file ignored there and not named in ``kubevirt`` would run in neither.
"""

import configparser
import pathlib

TOX_INI = pathlib.Path(__file__).parents[2] / 'tox.ini'


def _default_args(env):
    config = configparser.ConfigParser(interpolation=None)
    config.read(TOX_INI)
    command = config['testenv:%s' % env]['commands'].replace('\\\n', ' ')
    return command.split('{posargs:', 1)[1].split('}', 1)[0].split()


def test_what_realkube_leaves_out_runs_on_the_real_kubevirt():
    ignored = {arg.split('=', 1)[1] for arg in _default_args('realkube')
               if arg.startswith('--ignore=')}
    assert ignored
    assert ignored <= set(_default_args('kubevirt'))


def test_every_named_suite_exists():
    root = TOX_INI.parent
    for env in ('realkube', 'kubevirt'):
        for arg in _default_args(env):
            assert (root / arg.split('=', 1)[-1]).exists(), arg
