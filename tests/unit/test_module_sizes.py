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

"""Every module over 450 lines is named, with its reason, in the docs."""

import pathlib

import sushy_kubevirt

LIMIT = 450
PACKAGE = pathlib.Path(sushy_kubevirt.__file__).parent
ARCHITECTURE = PACKAGE.parent / 'doc' / 'source' / 'architecture.rst'


def test_long_modules_are_explained():
    text = ARCHITECTURE.read_text()
    section = text[text.index('Modules over 450 lines'):]
    long = sorted(
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob('*.py')
        if len(path.read_text().splitlines()) > LIMIT)
    missing = [name for name in long if '``%s``' % name not in section]
    assert not missing, 'explain in architecture.rst: %s' % missing
