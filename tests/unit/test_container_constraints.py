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

"""etc/container/constraints.txt pins what the Containerfile installs.

Offline: the files are parsed only. That the pins install together is
shown by tests/functional/test_packaging.py, which runs the recipe's
``pip install`` with them.
"""

import pathlib
import re
import shlex

from packaging import requirements
from packaging import utils
from packaging import version

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / 'etc' / 'container' / 'constraints.txt'
PIN = re.compile(r'^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$')


def pins():
    """``{canonical name: Version}``; every line is ``name==version``."""
    found = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        match = PIN.match(line)
        assert match, 'not an exact pin: %r' % line
        name = utils.canonicalize_name(match.group(1))
        assert name not in found, 'pinned twice: %s' % name
        found[name] = version.Version(match.group(2))
    return found


def package_requirements():
    """requirements.txt (the image installs no extra)."""
    lines = (ROOT / 'requirements.txt').read_text().splitlines()
    return [requirements.Requirement(line.split('#')[0])
            for line in lines if line.split('#')[0].strip()]


def test_every_line_is_an_exact_pin():
    assert len(pins()) > 10


def test_every_requirement_is_pinned_at_an_allowed_version():
    found = pins()
    reqs = package_requirements()
    assert 'waitress' in {r.name for r in reqs}
    for req in reqs:
        name = utils.canonicalize_name(req.name)
        assert name in found, '%s is not pinned' % req
        assert req.specifier.contains(found[name], prereleases=True), (
            '%s pinned at %s' % (req, found[name]))


def test_the_containerfile_installs_with_the_constraints():
    text = (ROOT / 'Containerfile').read_text().replace('\\\n', ' ')
    [install] = [line for line in text.splitlines()
                 if line.startswith('RUN ') and 'pip install' in line]
    words = shlex.split(install[install.index('pip install'):])
    assert words[words.index('-c') + 1] == (
        '/src/' + str(CONSTRAINTS.relative_to(ROOT)))
    # The package without extras: its server is waitress, a requirement.
    assert words[-1] == '/src'
    assert not [w for w in words if 'gunicorn' in w]
