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

"""RFC 6902 JSON-patch operation builders and a small pure applier.

Paths are RFC 6901 JSON pointers: ``path('metadata', 'annotations',
'sushy-kubevirt.io/bios')`` gives
``/metadata/annotations/sushy-kubevirt.io~1bios``. Builders return plain
dicts; lists of them are sent as ``application/json-patch+json``.
"""

import copy


def escape(token):
    """Escape a JSON-pointer token: ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return str(token).replace('~', '~0').replace('/', '~1')


def unescape(token):
    """Inverse of :func:`escape`."""
    return token.replace('~1', '/').replace('~0', '~')


def path(*tokens):
    """JSON pointer made of the escaped ``tokens`` ('' for no tokens)."""
    return ''.join('/' + escape(t) for t in tokens)


def test(path, value):
    """A ``test`` operation."""
    return {'op': 'test', 'path': path, 'value': value}


def add(path, value):
    """An ``add`` operation (replaces an existing object member)."""
    return {'op': 'add', 'path': path, 'value': value}


def replace(path, value):
    """A ``replace`` operation (the target must exist)."""
    return {'op': 'replace', 'path': path, 'value': value}


def remove(path):
    """A ``remove`` operation (the target must exist)."""
    return {'op': 'remove', 'path': path}


class PatchError(ValueError):
    """An operation failed: missing path, bad index or failed test."""


def apply(doc, ops):
    """Return a copy of ``doc`` with ``ops`` applied (RFC 6902).

    Supports add, remove, replace, test, move and copy. ``doc`` is not
    modified. Raises :class:`PatchError` when an operation fails.
    """
    doc = copy.deepcopy(doc)
    for op in ops:
        doc = _apply_one(doc, op)
    return doc


def _split(pointer):
    if pointer == '':
        return []
    if not pointer.startswith('/'):
        raise PatchError('Invalid JSON pointer %r' % pointer)
    return [unescape(t) for t in pointer[1:].split('/')]


def _index(container, token, allow_end=False):
    if token == '-' and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == '0'):
        raise PatchError('Invalid array index %r' % token)
    index = int(token)
    if index > len(container) or (index == len(container) and
                                  not allow_end):
        raise PatchError('Array index %s out of range' % index)
    return index


def _resolve(doc, tokens):
    for token in tokens:
        if isinstance(doc, list):
            doc = doc[_index(doc, token)]
        elif isinstance(doc, dict) and token in doc:
            doc = doc[token]
        else:
            raise PatchError('Path /%s does not exist' % '/'.join(tokens))
    return doc


def _add(doc, tokens, value):
    if not tokens:
        return value
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError('Cannot add below a scalar')
    return doc


def _remove(doc, tokens):
    if not tokens:
        raise PatchError('Cannot remove the whole document')
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, list):
        return parent.pop(_index(parent, last))
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    raise PatchError('Path /%s does not exist' % '/'.join(tokens))


def _apply_one(doc, op):
    kind = op.get('op')
    tokens = _split(op.get('path', ''))
    if kind == 'add':
        return _add(doc, tokens, copy.deepcopy(op['value']))
    if kind == 'remove':
        _remove(doc, tokens)
        return doc
    if kind == 'replace':
        _resolve(doc, tokens)
        if tokens:
            _remove(doc, tokens)
        return _add(doc, tokens, copy.deepcopy(op['value']))
    if kind == 'test':
        if _resolve(doc, tokens) != op['value']:
            raise PatchError('Test failed at %s' % op['path'])
        return doc
    if kind in ('move', 'copy'):
        source = _split(op['from'])
        if kind == 'move':
            value = _remove(doc, source)
        else:
            value = copy.deepcopy(_resolve(doc, source))
        return _add(doc, tokens, value)
    raise PatchError('Unknown operation %r' % kind)
