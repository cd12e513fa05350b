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

"""Run DMTF's Redfish validators offline and parse their FAIL lines.

The validators are console scripts from PyPI (``redfish-service-validator``,
``redfish-interop-validator``); they run as subprocesses with HTTP Basic
(the emulator without an auth file accepts any credentials) and write a
debug log whose ``Validating <uri>...``, ``FAIL - ...`` and ``WARN - ...``
lines we parse.

Where the CSDL, Ironic's profile or a validator is missing the tests
skip - except with ``CI=true``, where that is a failure (:func:`require`).
"""

import collections
import glob
import os
import pathlib
import re
import shutil
import subprocess

import pytest
from tests.functional.emulator import harness

REPO = pathlib.Path(__file__).resolve().parents[3]
#: A file every DMTF CSDL directory has.
CSDL_MARK = 'ServiceRoot_v1.xml'
#: In CI the repository is a clone with a copy of ``shared/`` beside it
#: (``../shared``); a git worktree under ``wt/`` finds it one level up.
CSDL_DIR = next((d for d in (REPO.parent / 'shared' / 'redfish-csdl',
                             REPO.parents[1] / 'shared' / 'redfish-csdl')
                 if (d / CSDL_MARK).is_file()),
                REPO.parent / 'shared' / 'redfish-csdl')
#: Ironic's profile (openstack/ironic ``redfish-interop-profiles/``).
PROFILE_ENV = 'IRONIC_INTEROP_PROFILE'
TIMEOUT = 120

Fail = collections.namedtuple('Fail', 'uri prop kind text')
#: One validator run: URIs validated, FAILs and WARNs (both Fail tuples).
Run = collections.namedtuple('Run', 'validated fails warns')

_VALIDATING = re.compile(r' - Validating (\S+?)\.\.\.$')
_FAIL = re.compile(r' - FAIL - (.*)$')
_WARN = re.compile(r' - WARN - (.*)$')
# "<property path> (<value>): <Kind> Error: ..." or "<Kind> Error: ...".
_DETAIL = re.compile(r'^(?:(/\S*) \(.*?\): )?([A-Za-z ]+?Error): ')
_UUID = re.compile(r'[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}')
_INDEX = re.compile(r'/\d+(?=/|$)')


def tool(name):
    """Path of a console script in this venv or on PATH, or None."""
    path = os.path.join(harness.BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


def require(present, what):
    """Skip unless ``present``; with ``CI=true`` fail instead."""
    if present:
        return
    if os.environ.get('CI') == 'true':
        pytest.fail('%s (CI=true: the validators must run)' % what)
    pytest.skip(what)


def parse_log(lines):
    """A :data:`Run` from a validator debug log."""
    uri, validated, found = None, [], {_FAIL: [], _WARN: []}
    for line in lines:
        line = line.rstrip()
        match = _VALIDATING.search(line)
        if match:
            uri = match.group(1)
            validated.append(uri)
            continue
        for pattern, into in found.items():
            match = pattern.search(line)
            if match:
                text = match.group(1)
                detail = _DETAIL.match(text)
                prop, kind = detail.groups() if detail else (None, text)
                into.append(Fail(uri, prop, kind, text))
    return Run(validated, found[_FAIL], found[_WARN])


def key(fail):
    """A FAIL independent of ids, array indices and HTTP codes.

    UUIDs (system, manager, chassis ids) become ``{id}``, array indices
    ``/N``; the kind ("Resource Error") stands for the message, so a
    link answered 404 by one service and 501 by another is one FAIL.
    """
    uri = _UUID.sub('{id}', fail.uri or '').rstrip('/')
    prop = _INDEX.sub('/N', _UUID.sub('{id}', fail.prop or ''))
    return uri, prop, fail.kind


def _run(argv, logdir, name):
    os.makedirs(logdir, exist_ok=True)
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    logs = sorted(glob.glob(os.path.join(logdir, '*', name)))
    if not logs:
        raise AssertionError('%s wrote no log (exit %s):\n%s%s' % (
            argv[0], result.returncode, result.stdout[-2000:],
            result.stderr[-2000:]))
    with open(logs[-1], errors='replace') as log:
        return parse_log(log)


def service_validator(url, logdir, schema_dir=CSDL_DIR):
    """The :data:`Run` of ``rf_service_validator`` (offline)."""
    argv = [tool('rf_service_validator'), '--rhost', url,
            '--authtype', 'Basic', '-u', 'ironic', '-p', 'ironic',
            '--skipschema', '--schema_directory', str(schema_dir),
            '--logdir', str(logdir)]
    return _run(argv, logdir, 'RedfishServiceValidatorDebug_*.log')


def interop_validator(url, logdir, profile):
    """The :data:`Run` of ``rf_interop_validator``."""
    argv = [tool('rf_interop_validator'), '--rhost', url,
            '--authtype', 'Basic', '-u', 'ironic', '-p', 'ironic',
            '--logdir', str(logdir), str(profile)]
    return _run(argv, logdir, 'RedfishInteropValidatorDebug_*.log')


def report(fails):
    """One line per FAIL, for assertion messages and the docs."""
    return '\n'.join('%s %s' % (f.uri, f.text[:160]) for f in fails)
