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

"""etc/sushy-emulator/kubevirt.conf lists every key the emulator reads."""

import pathlib
import re

from sushy_kubevirt import cli
from sushy_kubevirt import config

SAMPLE = (pathlib.Path(__file__).resolve().parents[2] / 'etc' /
          'sushy-emulator' / 'kubevirt.conf')


def _listed():
    """The keys of the sample's ``# KEY = value`` lines."""
    return set(re.findall(r'^# (SUSHY_EMULATOR_KUBEVIRT_\w+) = ',
                          SAMPLE.read_text(), re.MULTILINE))


def test_the_sample_lists_every_known_key():
    assert sorted(config.known_keys() - _listed()) == []


def test_the_sample_lists_no_unknown_key():
    assert sorted(_listed() - config.known_keys()) == []


def test_each_listed_key_says_its_default():
    comment = []
    for line in SAMPLE.read_text().splitlines():
        match = re.match(r'# (SUSHY_EMULATOR_KUBEVIRT_\w+) = ', line)
        if match:
            assert 'Default' in ' '.join(comment), match.group(1)
            comment = []
        elif line.startswith('#'):
            comment.append(line)
        else:
            comment = []


def test_cli_names_the_sample():
    assert pathlib.Path(cli.sample_config()).read_text() == \
        SAMPLE.read_text()
