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

"""Copies of a stored object under other names (bulk seeding).

``Template(obj, tokens)`` finds, once, every string of ``obj`` (a value
or a key) that contains one of ``tokens``; ``stamp(table)`` returns a
copy in which each token in those strings becomes ``table[token]``. Only
the dicts and lists on the way to them are copied: the rest is shared
with ``obj``, which is safe because stored objects are never changed in
place (``storage``). A stamp costs O(changed paths), not O(object).
"""

import re


class Template:
    """``obj`` with its ``tokens`` located."""

    def __init__(self, obj, tokens):
        self.obj = obj
        self._pattern = re.compile('(%s)' % '|'.join(
            re.escape(t) for t in sorted(set(tokens), key=len, reverse=True)))
        self._plan = self._find(obj)

    def _find(self, value):
        """The plan of copying ``value``; None if it holds no token.

        For a string its parts, tokens at odd positions (or the token it
        is); for a container ``(rekey, steps)``, a step ``(key, key has a
        token, plan of the value)``.
        """
        if isinstance(value, str):
            parts = self._pattern.split(value)
            if len(parts) == 1:
                return None
            return parts[1] if parts[::2] == ['', ''] else parts
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list):
            items = enumerate(value)
        else:
            return None
        steps = []
        for key, item in items:
            rekey = isinstance(key, str) and bool(self._pattern.search(key))
            plan = self._find(item)
            if rekey or plan is not None:
                steps.append((key, rekey, plan))
        if not steps:
            return None
        return any(step[1] for step in steps), steps

    def stamp(self, table):
        """A copy of the object with each token ``t`` as ``table[t]``."""
        return _apply(self.obj, self._plan, table, self._pattern)


def _apply(value, plan, table, pattern):
    if plan is None:
        return value
    if isinstance(plan, str):   # the string is a token
        return table[plan]
    if isinstance(plan, list):  # the string holds tokens
        return ''.join(part if i % 2 == 0 else table[part]
                       for i, part in enumerate(plan))
    rekey, steps = plan
    if rekey:   # rebuild in order, renaming keys
        plans = {key: (renamed, sub_plan) for key, renamed, sub_plan in steps}
        new = {}
        for key, item in value.items():
            renamed, sub_plan = plans.get(key, (False, None))
            if renamed:
                key = pattern.sub(lambda m: table[m.group(0)], key)
            new[key] = _apply(item, sub_plan, table, pattern)
        return new
    new = dict(value) if isinstance(value, dict) else list(value)
    for key, _renamed, sub_plan in steps:
        new[key] = _apply(value[key], sub_plan, table, pattern)
    return new
