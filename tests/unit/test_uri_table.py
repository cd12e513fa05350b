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

"""The URI table of ``doc/source/architecture.rst`` is the declarations'.

:func:`sushy_kubevirt.plugin.uri_table` reads the extension points and
the blueprint's routes; the docs show it between two comments. When a
route changes, this test fails and prints the table to paste there.
"""

import pathlib

from sushy_kubevirt import hooks
from sushy_kubevirt import plugin

DOC = (pathlib.Path(__file__).parents[2] / 'doc' / 'source'
       / 'architecture.rst')
START = '.. uri-table-start'
END = '.. uri-table-end'


def render():
    lines = [START, '', '.. list-table::', '   :header-rows: 1',
             '   :widths: 50 25 25', '',
             '   * - URI', '     - Method: privilege', '     - Answered by']
    for rule, needs, answer in plugin.uri_table():
        lines += ['   * - ``%s``' % rule,
                  '     - %s' % ', '.join(
                      '%s: %s' % item for item in sorted(needs.items())),
                  '     - %s' % answer]
    return '\n'.join(lines + ['', END])


def test_the_docs_show_the_declared_table():
    text = DOC.read_text()
    start, end = text.find(START), text.find(END)
    assert start >= 0 and end > start, 'no %s ... %s in %s' % (
        START, END, DOC)
    shown = text[start:end + len(END)]
    assert shown == render(), 'paste this into %s:\n%s' % (DOC, render())


def test_every_method_declares_a_privilege():
    for rule, needs, _ in plugin.uri_table():
        assert needs and all(needs.values()), rule


def test_every_route_served_is_declared():
    from sushy_tools.emulator import main

    needs = hooks.privilege_table(plugin.EXTENSION_POINTS
                                  + plugin.UNCHANGED_ROUTES)
    undeclared = sorted(
        (rule.rule, method) for rule in main.app.url_map.iter_rules()
        for method in rule.methods - {'HEAD', 'OPTIONS'}
        if (rule.endpoint, method) not in needs)
    assert undeclared == []
