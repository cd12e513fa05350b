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

"""Label selectors (full syntax) and field selectors, as predicates."""

import re

from sushy_kubevirt.simulator import apistatus

_TOKEN = re.compile(r'\s*(!=|==|=|!|\(|\)|,|[^\s!=(),<>]+|<|>)')
_KEY = re.compile(r'^([a-z0-9A-Z.\-]+/)?[a-zA-Z0-9]([-_.a-zA-Z0-9]*'
                  r'[a-zA-Z0-9])?$')
_VALUE = re.compile(r'^([a-zA-Z0-9]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?)?$')


def _error(message):
    return apistatus.bad_request('unable to parse requirement: ' + message)


def _tokens(text):
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or not match.group(1):
            if text[pos:].strip():
                raise _error('invalid character at %r' % text[pos:])
            break
        tokens.append(match.group(1))
        pos = match.end()
    return tokens


def _check_key(key):
    if not _KEY.match(key) or len(key.split('/')[-1]) > 63:
        raise _error('invalid label key "%s"' % key)
    return key


def _check_value(value):
    if len(value) > 63 or not _VALUE.match(value):
        raise _error('invalid label value: "%s"' % value)
    return value


def _requirement(tokens, i):
    """Parse one requirement starting at tokens[i]; return (pred, i)."""
    if tokens[i] == '!':
        key = _check_key(tokens[i + 1])
        return (lambda labels: key not in labels), i + 2
    key = _check_key(tokens[i])
    i += 1
    if i == len(tokens) or tokens[i] == ',':
        return (lambda labels: key in labels), i
    op = tokens[i]
    if op in ('=', '==', '!='):
        if i + 1 < len(tokens) and tokens[i + 1] in ('(', ')'):
            raise _error("found '%s', expected: identifier" % tokens[i + 1])
        if i + 1 < len(tokens) and tokens[i + 1] != ',':
            value = _check_value(tokens[i + 1])
            i += 2
        else:
            value, i = '', i + 1
        if op == '!=':
            return (lambda labels: labels.get(key) != value), i
        return (lambda labels: labels.get(key) == value), i
    if op in ('in', 'notin'):
        if i + 1 >= len(tokens) or tokens[i + 1] != '(':
            raise _error("found '%s', expected: '('"
                         % (tokens[i + 1] if i + 1 < len(tokens) else ''))
        values, i = set(), i + 2
        while i < len(tokens) and tokens[i] != ')':
            if tokens[i] != ',':
                values.add(_check_value(tokens[i]))
            i += 1
        if i == len(tokens):
            raise _error("found '', expected: ')'")
        if op == 'in':
            return (lambda labels: labels.get(key) in values), i + 1
        return (lambda labels: labels.get(key) not in values), i + 1
    if op in ('<', '>'):
        try:
            bound = int(tokens[i + 1])
        except (IndexError, ValueError):
            raise _error('for %s operator, the value must be an integer'
                         % ('gt' if op == '>' else 'lt'))

        def compare(labels):
            try:
                value = int(labels[key])
            except (KeyError, ValueError):
                return False
            return value > bound if op == '>' else value < bound
        return compare, i + 2
    raise _error("found '%s', expected: in, notin, =, ==, !=, gt, lt"
                 % op)


def parse_labels(text):
    """Predicate ``fn(labels: dict) -> bool`` for a label selector."""
    if not text or not text.strip():
        return None
    tokens = _tokens(text)
    preds, i = [], 0
    while i < len(tokens):
        pred, i = _requirement(tokens, i)
        preds.append(pred)
        if i < len(tokens):
            if tokens[i] != ',':
                raise _error("found '%s', expected: ',' or 'end of string'"
                             % tokens[i])
            i += 1
            if i == len(tokens):
                raise _error("found '', expected: identifier")
    return lambda labels: all(p(labels) for p in preds)


def parse_fields(text, rt):
    """Predicate ``fn(obj) -> bool`` for a field selector on ``rt``.

    Only ``metadata.name`` and (namespaced types) ``metadata.namespace``
    are supported, as for custom resources.
    """
    if not text or not text.strip():
        return None
    supported = {'metadata.name'}
    if rt.namespaced:
        supported.add('metadata.namespace')
    preds = []
    for term in text.split(','):
        match = re.match(r'^\s*([^!=\s]+)\s*(!=|==|=)\s*(.*?)\s*$', term)
        if not match:
            raise apistatus.bad_request('invalid selector: \'%s\'; can\'t '
                                        'understand \'%s\'' % (text, term))
        field, op, value = match.groups()
        if field not in supported:
            raise apistatus.bad_request('field label not supported: ' + field)
        attr = field.split('.', 1)[1]
        negate = op == '!='
        preds.append(lambda obj, a=attr, v=value, n=negate:
                     (obj['metadata'].get(a, '') == v) != n)
    return lambda obj: all(p(obj) for p in preds)


def matcher(label_selector, field_selector, rt):
    """One predicate ``fn(obj)`` for both selectors, or None for all."""
    labels = parse_labels(label_selector)
    fields = parse_fields(field_selector, rt)
    if labels is None and fields is None:
        return None

    def match(obj):
        if labels is not None and not labels(
                obj['metadata'].get('labels') or {}):
            return False
        return fields is None or fields(obj)
    return match
