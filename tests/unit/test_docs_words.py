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

"""The documentation speaks of the software, not of how it was made."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: Words about the work rather than the software.
PROCESS_WORDS = re.compile(
    r'\bissue\s*#|\bissue \d|\bhelpers?\b|\bthis session\b|\bTODO\b|'
    r'\bXXX\b|\bthe previous stop\b|\bnot made here\b', re.IGNORECASE)


def _documents():
    yield ROOT / 'README.rst'
    yield from sorted((ROOT / 'doc' / 'source').rglob('*.rst'))
    yield from sorted((ROOT / 'releasenotes' / 'notes').glob('*.yaml'))


def test_the_documents_are_found():
    names = {path.name for path in _documents()}
    assert {'README.rst', 'index.rst', 'configuration.rst'} <= names
    assert any(name.endswith('.yaml') for name in names)


def test_no_process_words_in_the_documents():
    found = []
    for path in _documents():
        for number, line in enumerate(
                path.read_text(encoding='utf-8').splitlines(), 1):
            for match in PROCESS_WORDS.finditer(line):
                found.append('%s:%d: %r' % (
                    path.relative_to(ROOT), number, match.group()))
    assert not found, '\n'.join(found)
