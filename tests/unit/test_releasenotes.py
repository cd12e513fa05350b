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

"""The release notes build, and the notes of no release yet read sensibly."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Sphinx and reno come with the docs environment (tox -e docs).
pytest.importorskip('sphinx')
pytest.importorskip('reno')


def test_unreleased_notes_are_titled_unreleased(tmp_path):
    subprocess.run(
        [sys.executable, '-m', 'sphinx', '-q', '-W', '-E', '-b', 'html',
         str(ROOT / 'releasenotes' / 'source'), str(tmp_path)],
        check=True, timeout=120, cwd=ROOT)
    page = (tmp_path / 'index.html').read_text()
    titles = re.findall(r'<h2>([^<]+)', page)
    assert titles, 'no version section'
    assert '0.0.0' not in titles
    assert not any(re.fullmatch(r'.+-\d+', t) for t in titles), titles
    assert titles[0] == 'Unreleased' or re.fullmatch(r'[\d.]+', titles[0])
