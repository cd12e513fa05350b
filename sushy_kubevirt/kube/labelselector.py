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

"""Label selectors matched against an object's labels, client-side.

The syntax of ``metav1.LabelSelector``'s string form (``labels.Parse``):
requirements joined by commas, each ``key``, ``!key``, ``key=value``,
``key==value``, ``key!=value``, ``key in (v1,v2)`` or ``key notin
(v1,v2)``; ``!=`` and ``notin`` also match an object without the key.
The Kubernetes client parses none (selectors go to the API server), so
the few lines are ours.
"""

import re

#: Longest selector text parsed (a longer one is refused, not scanned).
MAX_LENGTH = 4096
_PREFIX_LENGTH = 253
# Kubernetes' label rules: a name or value of at most 63 characters,
# alphanumeric at both ends; a key's optional prefix a DNS subdomain.
_NAME = r'[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?'
_LABEL = r'[a-z0-9](?:[-a-z0-9]*[a-z0-9])?'
_PREFIX = r'{label}(?:\.{label})*'.format(label=_LABEL)
_KEY = r'(?:{prefix}/)?{name}'.format(prefix=_PREFIX, name=_NAME)
_VALUE = '(?:%s)?' % _NAME
_REQUIREMENT = re.compile(
    r'^\s*(?:(?P<not>!)\s*(?P<absent>{key})'
    r'|(?P<key>{key})\s*(?:(?P<op>==|=|!=)\s*(?P<value>{value})'
    r'|\s(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*$'.format(
        key=_KEY, value=_VALUE))
_SPLIT = re.compile(r',(?![^()]*\))')


def _requirement(text):
    match = _REQUIREMENT.match(text)
    if not match or len((match.group('absent') or match.group('key'))
                        .rpartition('/')[0]) > _PREFIX_LENGTH:
        raise ValueError('not a label selector requirement (a key is an '
                         'optional DNS subdomain prefix and "/", then a name '
                         'of at most 63 characters; a value at most 63 '
                         'characters): %r' % text[:100])
    if match.group('not'):
        key = match.group('absent')
        return lambda labels: key not in labels
    key, op = match.group('key'), match.group('op')
    if op:
        value = match.group('value')
        if op == '!=':
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match.group('set'):
        values = {v.strip() for v in match.group('values').split(',')}
        if not all(re.fullmatch(_VALUE, v) for v in values):
            raise ValueError('not a list of label values: %r' % text[:100])
        if match.group('set') == 'in':
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    return lambda labels: key in labels


def parse(text):
    """A predicate ``labels -> bool`` of selector ``text``.

    :raises ValueError: naming the requirement that is not valid.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError('an empty label selector selects everything')
    if len(text) > MAX_LENGTH:
        raise ValueError('a label selector is at most %d characters'
                         % MAX_LENGTH)
    tests = [_requirement(part) for part in _SPLIT.split(text)]
    return lambda labels: all(test(labels or {}) for test in tests)
