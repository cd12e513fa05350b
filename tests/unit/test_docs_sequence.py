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

"""The docs' sequence diagrams: text in, SVG out, offline."""

import importlib.util
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Sphinx comes with the docs environment (tox -e docs).
pytest.importorskip('sphinx')
EXT = ROOT / 'doc' / 'source' / '_ext'
_SPEC = importlib.util.spec_from_file_location('sequence',
                                               EXT / 'sequence.py')
sequence = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sequence)

SVG = '{http://www.w3.org/2000/svg}'
SOURCE = '''
participant a Ironic
participant b Emulator   # a comment
a -> b: POST InsertMedia\\n{"Image": url}
b -> b: check <the> URL & host
note a, b: spanning note
== divider ==
b --> a: 204
'''


def test_a_description_is_drawn_as_svg():
    tree = ET.fromstring(sequence.render(SOURCE, 'A & B'))
    texts = [t.text for t in tree.iter(SVG + 'text')]
    assert texts.count('Ironic') == 2 and texts.count('Emulator') == 2
    for text in ('POST InsertMedia', '{"Image": url}', 'spanning note',
                 'check <the> URL & host', 'divider', '204'):
        assert text in texts
    assert tree.find(SVG + 'title').text == 'A & B'
    lines = [line for line in tree.iter(SVG + 'line')
             if line.get('marker-end')]
    assert len(lines) == 2
    assert [line.get('stroke-dasharray') for line in lines] == [None, '5,3']
    assert len([p for p in tree.iter(SVG + 'path')
                if p.get('marker-end')]) == 1, 'the self call'
    xs = [float(line.get('x1')) for line in lines]
    assert xs[0] < xs[1], 'a is left of b'
    assert float(tree.get('width')) > max(xs)


@pytest.mark.parametrize('source, message', [
    ('participant a A\na -> c: x', 'c is no participant'),
    ('participant a A\nparticipant a B', 'declared twice'),
    ('participant a A\na => a: x', 'not a statement'),
    ('', 'no participant'),
])
def test_mistakes_are_named(source, message):
    with pytest.raises(sequence.Invalid, match=message):
        sequence.render(source)


def test_the_pages_build_with_their_diagrams(tmp_path):
    source = tmp_path / 'src'
    source.mkdir()
    (source / 'conf.py').write_text(
        'import sys\nsys.path.insert(0, %r)\nextensions = ["sequence"]\n'
        % str(EXT))
    (source / 'index.rst').write_text(
        'Page\n====\n\n.. sequence-diagram::\n   :caption: Flow\n\n'
        + ''.join('   %s\n' % line for line in SOURCE.strip().splitlines()))
    for builder in ('html', 'text'):
        subprocess.run([sys.executable, '-m', 'sphinx', '-q', '-W', '-E',
                        '-b', builder, str(source),
                        str(tmp_path / builder)], check=True, timeout=120)
    page = (tmp_path / 'html' / 'index.html').read_text()
    assert page.count('<svg ') == 1 and 'POST InsertMedia' in page
    assert 'Flow' in (tmp_path / 'text' / 'index.txt').read_text()


@pytest.mark.parametrize('page', ['virtual-media.rst', 'eventservice.rst'])
def test_the_documented_sequences_parse(page):
    text = (ROOT / 'doc' / 'source' / page).read_text()
    block = text.split('.. sequence-diagram::', 1)[1].splitlines()
    start = block.index('', 1) + 1      # after the options
    end = next(i for i in range(start, len(block))
               if block[i] and not block[i].startswith('   '))
    body = [line[3:] for line in block[start:end]]
    participants, steps = sequence.parse('\n'.join(body))
    assert len(participants) >= 4 and len(steps) >= 15
