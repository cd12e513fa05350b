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

"""The RBAC tables of doc/source/deployment.rst are the manifests' rules.

Each table follows a comment ``.. rbac-table: PATH KIND NAME`` naming a
role of ``etc/kubernetes``; its rows (API group, resources, verbs) must
give exactly that role's rules, and every shipped role has a table.
"""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / 'doc' / 'source' / 'deployment.rst'
KUBE = ROOT / 'etc' / 'kubernetes'
MARK = re.compile(r'^\.\. rbac-table: (\S+) (Role|ClusterRole) (\S+)$')
LITERAL = re.compile(r'``([^`]*)``')


def manifest_rules(path, kind, name):
    """``{(apiGroup, resource): {verbs}}`` of one role in ``path``."""
    [role] = [doc for doc in yaml.safe_load_all((KUBE / path).read_text())
              if doc and doc['kind'] == kind and
              doc['metadata']['name'] == name]
    rules = {}
    for rule in role['rules']:
        for group in rule['apiGroups']:
            for resource in rule['resources']:
                assert (group, resource) not in rules, (path, resource)
                rules[group, resource] = set(rule['verbs'])
    return rules


def table_rows(lines):
    """The cells of the list-table that starts ``lines``, header off."""
    rows = []
    for line in lines:
        if line.startswith('   * - '):
            rows.append([line[7:]])
        elif line.startswith('     - '):
            rows[-1].append(line[7:])
        elif line.startswith('       ') and rows:
            rows[-1][-1] += ' ' + line.strip()
        elif line.strip() and not line.startswith('   ') and rows:
            break
    return rows[1:]


def doc_tables(text=None):
    """``{(path, kind, name): {(apiGroup, resource): {verbs}}}``."""
    lines = (DOC.read_text() if text is None else text).splitlines()
    tables = {}
    for number, line in enumerate(lines):
        mark = MARK.match(line)
        if not mark:
            continue
        rules = {}
        for group, resources, verbs, *_ in table_rows(lines[number + 1:]):
            [group] = LITERAL.findall(group)
            group = '' if group == '""' else group
            for resource in LITERAL.findall(resources):
                assert (group, resource) not in rules, (line, resource)
                rules[group, resource] = {v.strip() for v in verbs.split(',')}
        assert rules, 'no table after %r' % line
        tables[mark.groups()] = rules
    return tables


def shipped_roles():
    for path in sorted(KUBE.rglob('*.yaml')):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc['kind'] in ('Role', 'ClusterRole'):
                yield (str(path.relative_to(KUBE)), doc['kind'],
                       doc['metadata']['name'])


def test_every_shipped_role_has_a_table():
    assert sorted(doc_tables()) == sorted(shipped_roles())


def test_each_table_gives_the_rules_of_its_role():
    for (path, kind, name), rules in doc_tables().items():
        assert rules == manifest_rules(path, kind, name), (path, kind, name)


def test_a_difference_is_seen():
    """Secrets without patch in the text: that table no longer agrees."""
    text = DOC.read_text()
    full = 'get, list, watch, create, patch, delete'
    assert full in text
    tables = doc_tables(text.replace(full, 'get, list, create, delete', 1))
    assert [key for key, rules in tables.items()
            if rules != manifest_rules(*key)] == [
        ('base/role.yaml', 'Role', 'sushy-kubevirt')]
