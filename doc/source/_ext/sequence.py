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

"""``.. sequence-diagram::``: a sequence diagram drawn as inline SVG.

The directive's content describes the diagram, one statement a line::

    participant ironic Ironic           # an id, then its label
    ironic -> emu: POST InsertMedia     # a call (solid arrow)
    emu --> ironic: 204                 # an answer (dashed arrow)
    emu -> emu: check the image         # a call to itself
    note emu: text                      # a note over one participant
    note ironic, kube: text             # ... or spanning several
    == text ==                          # a divider across the diagram

``\\n`` in a text breaks the line; ``#`` starts a comment. Options:
``:caption:`` (a figure caption, also the SVG's title).

Why a local extension: the documentation builds offline, without Java
or a browser. The sequence diagram packages for Sphinx either need a
server or Java (sphinxcontrib-plantuml, sphinxcontrib-kroki), render in
the reader's browser with JavaScript fetched from a CDN
(sphinxcontrib-mermaid ships no mermaid.js), or are no longer maintained
and fail with current Pillow (sphinxcontrib-seqdiag). Sequence diagrams
need only boxes, lines and text, which this module lays out itself.
"""

import hashlib
import re
from xml.sax import saxutils

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import docutils as sphinx_docutils

#: Layout in pixels; text widths are estimated from the character count.
FONT = 12
CHAR = 6.6
LINE = 15
BOX_HEIGHT = 32
MARGIN = 20
MIN_GAP = 120
SELF_WIDTH = 36

_PARTICIPANT = re.compile(r'^participant\s+(\w[\w.-]*)\s*(.*)$')
_MESSAGE = re.compile(r'^(\w[\w.-]*)\s*(-->|->)\s*(\w[\w.-]*)\s*:\s*(.*)$')
_NOTE = re.compile(r'^note\s+([\w.,\s-]+?)\s*:\s*(.*)$')
_DIVIDER = re.compile(r'^==\s*(.*?)\s*==$')


class Invalid(ValueError):
    """A line of the description that is not a statement."""


def _lines(text):
    return text.split('\\n')


def _width(lines):
    return max(len(line) for line in lines) * CHAR


def parse(source):
    """``(participants, steps)`` of a description.

    ``participants``: ``[(id, label)]`` in order; ``steps``: tuples
    ``('call'|'answer', a, b, lines)``, ``('note', [ids], lines)`` or
    ``('divider', lines)``. Raises :class:`Invalid`.
    """
    participants, steps = [], []
    for number, raw in enumerate(source.splitlines(), 1):
        line = raw.split(' #', 1)[0].strip()
        if not line or line.startswith('#'):
            continue
        known = [p[0] for p in participants]
        match = _PARTICIPANT.match(line)
        if match:
            if match.group(1) in known:
                raise Invalid('line %d: %s is declared twice'
                              % (number, match.group(1)))
            participants.append((match.group(1),
                                 match.group(2) or match.group(1)))
            continue
        match = _MESSAGE.match(line)
        if match:
            a, arrow, b, text = match.groups()
            ids = [a, b]
            step = ('call' if arrow == '->' else 'answer', a, b,
                    _lines(text))
        elif _NOTE.match(line):
            names, text = _NOTE.match(line).groups()
            ids = [n.strip() for n in names.split(',')]
            step = ('note', ids, _lines(text))
        elif _DIVIDER.match(line):
            ids, step = [], ('divider', _lines(_DIVIDER.match(line).group(1)))
        else:
            raise Invalid('line %d: not a statement: %s' % (number, line))
        for name in ids:
            if name not in known:
                raise Invalid('line %d: %s is no participant'
                              % (number, name))
        steps.append(step)
    if not participants:
        raise Invalid('no participant')
    return participants, steps


def _centres(participants, steps):
    index = {p[0]: i for i, p in enumerate(participants)}
    boxes = [max(90, len(label) * CHAR + 20) for _, label in participants]
    gaps = [max(MIN_GAP, (boxes[i] + boxes[i + 1]) / 2 + 20)
            for i in range(len(boxes) - 1)] + [0]
    for step in steps:
        if step[0] in ('call', 'answer'):
            a, b = sorted((index[step[1]], index[step[2]]))
            need = _width(step[3]) + 30
            if a == b:
                gaps[a] = max(gaps[a], need + SELF_WIDTH)
            elif sum(gaps[a:b]) < need:
                extra = (need - sum(gaps[a:b])) / (b - a)
                for i in range(a, b):
                    gaps[i] += extra
    xs = [MARGIN + boxes[0] / 2]
    for gap in gaps[:-1]:
        xs.append(xs[-1] + gap)
    return index, boxes, xs


def _text(x, y, lines, anchor='middle', weight=None):
    out = []
    for n, line in enumerate(lines):
        out.append('<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>' % (
            x, y + n * LINE, anchor,
            ' font-weight="%s"' % weight if weight else '',
            saxutils.escape(line)))
    return out


def _boxes(participants, boxes, xs, y):
    out = []
    for (_, label), width, x in zip(participants, boxes, xs):
        out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" rx="4" '
                   'fill="#eef3fb" stroke="#3c5a8a"/>'
                   % (x - width / 2, y, width, BOX_HEIGHT))
        out += _text(x, y + BOX_HEIGHT / 2 + FONT / 3, [label],
                     weight='bold')
    return out


def render(source, title=''):
    """The SVG (a string) of a description; raises :class:`Invalid`."""
    participants, steps = parse(source)
    index, boxes, xs = _centres(participants, steps)
    ident = 'seq' + hashlib.sha256(source.encode()).hexdigest()[:8]
    right = max(x + w / 2 for x, w in zip(xs, boxes))
    left = MARGIN
    body, rules, y = [], [], MARGIN + BOX_HEIGHT + 16
    for step in steps:
        kind = step[0]
        if kind in ('call', 'answer'):
            a, b, lines = xs[index[step[1]]], xs[index[step[2]]], step[3]
            y += len(lines) * LINE
            dash = ' stroke-dasharray="5,3"' if kind == 'answer' else ''
            style = ('stroke="#222" fill="none"%s marker-end="url(#%s-head)"'
                     % (dash, ident))
            if a == b:
                body += _text(a + 8, y - len(lines) * LINE + FONT - 4, lines,
                              anchor='start')
                body.append('<path d="M%.1f %.1f h%d v14 h-%d" %s/>' % (
                    a, y, SELF_WIDTH, SELF_WIDTH, style))
                right = max(right, a + SELF_WIDTH + _width(lines) + 16)
                y += 14
            else:
                body += _text((a + b) / 2, y - len(lines) * LINE + FONT - 2,
                              lines)
                body.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" '
                            '%s/>' % (a, y, b, y, style))
            y += 14
        elif kind == 'note':
            spots = [xs[index[n]] for n in step[1]]
            lines = step[2]
            width = max(_width(lines) + 16, max(spots) - min(spots) + 60)
            centre = (max(spots) + min(spots)) / 2
            height = len(lines) * LINE + 10
            body.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" '
                        'fill="#fff8c4" stroke="#a08c3c"/>'
                        % (centre - width / 2, y, width, height))
            body += _text(centre, y + FONT + 3, lines)
            left = min(left, centre - width / 2 - 4)
            right = max(right, centre + width / 2 + 4)
            y += height + 10
        else:
            lines = step[1]
            rules.append((len(body), y + 8))
            width = _width(lines) * 1.15 + 16   # bold
            middle = (xs[0] + xs[-1]) / 2
            body.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" '
                        'fill="#ffffff" stroke="#888"/>' % (
                            middle - width / 2, y, width,
                            len(lines) * LINE + 2))
            body += _text(middle, y + FONT, lines, weight='bold')
            y += len(lines) * LINE + 14
    for at, rule_y in reversed(rules):
        body.insert(at, '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" '
                    'stroke="#888" stroke-dasharray="2,2"/>'
                    % (left, rule_y, right, rule_y))
    bottom = y + 6
    shift = MARGIN - left
    width = right + shift + MARGIN
    height = bottom + BOX_HEIGHT + MARGIN
    lifelines = ['<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" '
                 'stroke="#9aa" stroke-dasharray="4,4"/>'
                 % (x, MARGIN + BOX_HEIGHT, x, bottom) for x in xs]
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" role="img" aria-label=%s '
            'font-family="sans-serif" font-size="%d" '
            'style="max-width: 100%%; height: auto">'
            % (width, height, width, height,
               saxutils.quoteattr(title or 'sequence diagram'), FONT))
    defs = ('<defs><marker id="%s-head" viewBox="0 0 10 10" refX="10" '
            'refY="5" markerWidth="8" markerHeight="8" orient="auto">'
            '<path d="M0 0 L10 5 L0 10 z" fill="#222"/></marker></defs>'
            % ident)
    parts = ([head, '<title>%s</title>' % saxutils.escape(title), defs,
              '<g transform="translate(%.1f 0)">' % shift]
             + lifelines + _boxes(participants, boxes, xs, MARGIN)
             + body + _boxes(participants, boxes, xs, bottom)
             + ['</g></svg>'])
    return '\n'.join(parts)


class sequence_diagram(nodes.General, nodes.Element):
    """A rendered diagram: ``node['svg']``; HTML only."""


def _visit_html(translator, node):
    translator.body.append('<div class="sequence-diagram">%s</div>'
                           % node['svg'])
    raise nodes.SkipNode


def _skip(translator, node):
    raise nodes.SkipNode


class SequenceDiagram(sphinx_docutils.SphinxDirective):
    """The directive; see the module docstring."""

    has_content = True
    option_spec = {'caption': directives.unchanged}

    def run(self):
        caption = ' '.join(self.options.get('caption', '').split())
        try:
            svg = render('\n'.join(self.content), caption)
        except Invalid as exc:
            raise self.error('sequence-diagram: %s' % exc)
        node = sequence_diagram(svg=svg)
        if not caption:
            return [node]
        figure = nodes.figure('', node)
        figure += nodes.caption(caption, caption)
        return [figure]


def setup(app):
    skip = (_skip, None)
    app.add_node(sequence_diagram, html=(_visit_html, None), text=skip,
                 latex=skip, man=skip, texinfo=skip)
    app.add_directive('sequence-diagram', SequenceDiagram)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
