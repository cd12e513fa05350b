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

import pytest

from sushy_kubevirt.kubevirt import jsonpatch as jp


@pytest.mark.parametrize('token, escaped', [
    ('plain', 'plain'),
    ('sushy-kubevirt.io/boot-once', 'sushy-kubevirt.io~1boot-once'),
    ('a~b', 'a~0b'),
    ('~/', '~0~1'),
    ('~1', '~01'),
    (3, '3'),
])
def test_escape_roundtrip(token, escaped):
    assert jp.escape(token) == escaped
    assert jp.unescape(escaped) == str(token)


def test_path_and_builders():
    path = jp.path('metadata', 'annotations', 'a/b~c')
    assert path == '/metadata/annotations/a~1b~0c'
    assert jp.path() == ''
    assert jp.test(path, 'x') == {'op': 'test', 'path': path, 'value': 'x'}
    assert jp.add(path, 1) == {'op': 'add', 'path': path, 'value': 1}
    assert jp.replace(path, 2) == {'op': 'replace', 'path': path,
                                   'value': 2}
    assert jp.remove(path) == {'op': 'remove', 'path': path}


DOC = {'a': {'b': [1, 2]}, 'm': {'x/y': 1, 'k~': 2}}


@pytest.mark.parametrize('ops, expected', [
    ([jp.add('/a/b/1', 9)], {'a': {'b': [1, 9, 2]}}),
    ([jp.add('/a/b/-', 3)], {'a': {'b': [1, 2, 3]}}),
    ([jp.add('/a/c', {'d': 1})], {'a': {'b': [1, 2], 'c': {'d': 1}}}),
    ([jp.add('/a/b', 0)], {'a': {'b': 0}}),
    ([jp.replace('/a/b/0', 5)], {'a': {'b': [5, 2]}}),
    ([jp.remove('/a/b/0')], {'a': {'b': [2]}}),
    ([jp.remove('/m/x~1y'), jp.replace('/m/k~0', 3)], {'m': {'k~': 3}}),
    ([jp.test('/a/b', [1, 2]), jp.remove('/a')], {'m': DOC['m']}),
    ([{'op': 'move', 'from': '/a/b/0', 'path': '/a/z'}],
     {'a': {'b': [2], 'z': 1}}),
    ([{'op': 'copy', 'from': '/a/b', 'path': '/a/z'}],
     {'a': {'b': [1, 2], 'z': [1, 2]}}),
])
def test_apply(ops, expected):
    result = jp.apply(DOC, ops)
    for key, value in expected.items():
        assert result[key] == value
    assert DOC['a']['b'] == [1, 2]  # input untouched


@pytest.mark.parametrize('op', [
    jp.test('/a/b', [2, 1]),
    jp.replace('/a/missing', 1),
    jp.remove('/a/b/2'),
    jp.add('/a/b/3', 1),
    jp.add('/nope/x', 1),
    jp.add('/a/b/01', 1),
    {'op': 'frobnicate', 'path': '/a'},
    {'op': 'add', 'path': 'no-slash', 'value': 1},
])
def test_apply_errors(op):
    with pytest.raises(jp.PatchError):
        jp.apply(DOC, [op])


def test_apply_against_literal_results():
    """Independent oracle: results written out by hand (RFC 6902 A.x)."""
    doc = {'metadata': {'annotations': {'a/b': 'c', 'x~y': 'z'}},
           'spec': {'disks': [{'name': 'root'}, {'name': 'cd'}]}}
    ops = [
        jp.test('/metadata/annotations/a~1b', 'c'),
        jp.remove(jp.path('metadata', 'annotations', 'a/b')),
        jp.replace(jp.path('metadata', 'annotations', 'x~y'), 'w'),
        jp.add('/spec/disks/1', {'name': 'new'}),
        jp.add('/spec/disks/-', {'name': 'last'}),
        jp.add(jp.path('spec', 'bootOrder'), 1),
        {'op': 'move', 'from': '/spec/disks/0', 'path': '/spec/first'},
        {'op': 'copy', 'from': '/spec/first', 'path': '/spec/again'},
    ]
    assert jp.apply(doc, ops) == {
        'metadata': {'annotations': {'x~y': 'w'}},
        'spec': {'disks': [{'name': 'new'}, {'name': 'cd'},
                           {'name': 'last'}],
                 'bootOrder': 1, 'first': {'name': 'root'},
                 'again': {'name': 'root'}}}
    assert doc['metadata']['annotations'] == {'a/b': 'c', 'x~y': 'z'}
