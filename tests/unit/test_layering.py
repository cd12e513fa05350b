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

"""The package's rooms import only downward, and no module of ours under
an alias: a layering a newcomer can follow."""

import ast
import functools
import pathlib
import subprocess
import sys

import sushy_kubevirt

PACKAGE = pathlib.Path(sushy_kubevirt.__file__).parent
#: The emulator's rooms, top floor first. A room imports only rooms on
#: its own floor or below (and never in a cycle).
FLOORS = (
    ('plugin', 'cli', 'hooks', 'loader', 'boot'),
    ('redfish',),
    ('drivers', 'events', 'accounts'),
    ('kube', 'kubevirt', 'errormap', 'imagecheck'),
    ('config', 'messages', 'files', 'ports', 'tethered'),
)
#: The stand-in cluster and the benchmarks, beside the emulator: they
#: import no room of its upper floors.
TOOLS = ('simulator', 'controlplane', 'bench')
#: ``sushy-kubevirt-emulator --simulate`` starts a simulator.
EXCEPTIONS = {('cli', 'simulator')}
#: Packages the drivers never import: they take a request object
#: (:mod:`sushy_kubevirt.drivers.context`), callable outside a request.
WEB = ('flask',)
#: Rooms whose modules import no module of ours under an alias.
NO_ALIAS = ('plugin', 'cli', 'hooks', 'loader', 'boot', 'redfish', 'events',
            'accounts', 'kube', 'errormap', 'imagecheck')


def _room(module):
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else parts[0]


@functools.lru_cache(maxsize=None)
def imports():
    """``(room, file, imported module, alias)`` of every import of ours."""
    return tuple(_imports())


def _imports():
    for path in sorted(PACKAGE.rglob('*.py')):
        if 'gomod' in path.parts:
            continue
        room = _room('.'.join(path.relative_to(PACKAGE.parent)
                              .with_suffix('').parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [(node.module + '.' + a.name, a.asname)
                         for a in node.names]
            elif isinstance(node, ast.Import):
                names = [(a.name, a.asname) for a in node.names]
            else:
                continue
            for module, alias in names:
                if module.startswith('sushy_kubevirt.'):
                    yield room, path.name, module, alias


def _floor(room):
    for number, rooms in enumerate(FLOORS):
        if room in rooms:
            return number
    return None


def _edges():
    return {(room, _room(module)) for room, _, module, _ in imports()
            if _room(module) != room}


def test_every_room_has_a_place():
    rooms = {room for edge in _edges() for room in edge}
    assert {r for r in rooms if _floor(r) is None} <= set(TOOLS)


def test_no_room_imports_upward():
    upward = sorted((a, b) for a, b in _edges() - EXCEPTIONS
                    if _floor(a) is not None
                    and (_floor(b) is None or _floor(b) < _floor(a)))
    assert upward == []


def test_the_rooms_import_no_cycle():
    edges = _edges()
    reach = {room: {b for a, b in edges if a == room}
             for room, _ in edges}
    for _ in range(len(reach)):
        for room, seen in reach.items():
            for other in list(seen):
                seen |= reach.get(other, set())
    assert sorted(room for room, seen in reach.items() if room in seen) \
        == []


def test_tools_import_only_the_lower_floors():
    found = sorted((a, b) for a, b in _edges() if a in TOOLS
                   and _floor(b) is not None and _floor(b) < 3)
    assert found == []


def test_kube_knows_nothing_of_kubevirt():
    assert [(a, b) for a, b in _edges() if a == 'kube'
            and b not in ('config',)] == []


def test_no_module_of_ours_is_imported_under_an_alias():
    found = [(name, module, alias) for room, name, module, alias
             in imports() if alias and room in NO_ALIAS]
    assert found == []


def test_every_room_is_a_package():
    # pbr packages what find_packages finds: only directories with an
    # __init__.py.
    rooms = {path.parent for path in PACKAGE.rglob('*.py')
             if 'gomod' not in path.parts}
    assert sorted(str(room) for room in rooms
                  if not (room / '__init__.py').exists()) == []


def _web(module):
    return module.partition('.')[0] in WEB


def test_the_drivers_import_no_flask():
    """Neither at the top of a module nor inside a function."""
    found = []
    for path in sorted((PACKAGE / 'drivers').glob('*.py')):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or '']
            else:
                continue
            found += [(path.name, node.lineno) for n in names if _web(n)]
    assert found == []


def test_the_drivers_load_without_flask():
    """Nor through a module they import (ours or sushy-tools')."""
    drivers = sorted(path.stem for path in (PACKAGE / 'drivers').glob('*.py'))
    code = ('import importlib, sys\n'
            'for name in %r:\n'
            '    importlib.import_module("sushy_kubevirt.drivers." + name)\n'
            'print(" ".join(sorted(m for m in sys.modules '
            'if m.partition(".")[0] in %r)))' % (drivers, WEB))
    loaded = subprocess.run([sys.executable, '-c', code], check=True,
                            capture_output=True, text=True, timeout=120)
    assert loaded.stdout.split() == []
