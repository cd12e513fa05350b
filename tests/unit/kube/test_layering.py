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

"""The cache layer imports no model or driver, and no module of ours as
an alias (issue 14: layering a newcomer can follow)."""

import ast
import pathlib

from sushy_kubevirt import kube

KUBE = pathlib.Path(kube.__file__).parent


def imports():
    for path in sorted(KUBE.glob('*.py')):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    yield path.name, '%s.%s' % (node.module, alias.name), \
                        alias.asname
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield path.name, alias.name, alias.asname


def test_kube_knows_nothing_of_kubevirt_or_the_drivers():
    found = [(name, module) for name, module, _ in imports()
             if module.startswith(('sushy_kubevirt.kubevirt',
                                   'sushy_kubevirt.drivers',
                                   'sushy_kubevirt.simulator'))]
    assert found == []


def test_no_module_of_ours_is_imported_under_an_alias():
    found = [(name, module, asname) for name, module, asname in imports()
             if asname and module.startswith('sushy_kubevirt')]
    assert found == []
