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

"""Read helpers for VM / VMI dicts and ops that create missing parents.

All readers tolerate missing intermediate keys (an absent list or object
reads as empty). Paths are tuples of JSON-pointer tokens.
"""

from sushy_kubevirt.kubevirt import jsonpatch

DOMAIN = ('spec', 'template', 'spec', 'domain')
DEVICES = DOMAIN + ('devices',)
VOLUMES = ('spec', 'template', 'spec', 'volumes')
ANNOTATIONS = ('metadata', 'annotations')


def get(obj, *tokens, default=None):
    """``obj[t0][t1]...`` or ``default`` when any level is missing/None."""
    for token in tokens:
        if isinstance(obj, dict):
            obj = obj.get(token)
        elif isinstance(obj, list) and isinstance(token, int):
            obj = obj[token] if -len(obj) <= token < len(obj) else None
        else:
            return default
        if obj is None:
            return default
    return obj


def domain(vm):
    """``spec.template.spec.domain`` ({} when absent)."""
    return get(vm, *DOMAIN, default={})


def disks(vm):
    """The template's ``domain.devices.disks`` list."""
    return get(vm, *DEVICES, 'disks', default=[])


def interfaces(vm):
    """The template's ``domain.devices.interfaces`` list."""
    return get(vm, *DEVICES, 'interfaces', default=[])


def volumes(vm):
    """The template's ``spec.template.spec.volumes`` list."""
    return get(vm, *VOLUMES, default=[])


def annotation(obj, key):
    """Value of annotation ``key`` or None."""
    return get(obj, *ANNOTATIONS, key)


def condition(obj, kind):
    """True when ``status.conditions`` has ``kind`` with status "True"."""
    for cond in get(obj, 'status', 'conditions', default=[]):
        if cond.get('type') == kind:
            return str(cond.get('status')) == 'True'
    return False


def set_ops(obj, tokens, value):
    """Ops setting ``tokens`` (object members only) to ``value``.

    Replaces an existing member; otherwise adds the first missing object
    level with the rest of the path nested inside it. Returns [] when the
    value is already equal.
    """
    node = obj
    for depth, token in enumerate(tokens):
        if not isinstance(node, dict) or node.get(token) is None:
            nested = value
            for inner in reversed(tokens[depth + 1:]):
                nested = {inner: nested}
            if isinstance(node, dict) and token in node:
                return [jsonpatch.replace(
                    jsonpatch.path(*tokens[:depth + 1]), nested)]
            return [jsonpatch.add(
                jsonpatch.path(*tokens[:depth + 1]), nested)]
        node = node[token]
    if node == value:
        return []
    return [jsonpatch.replace(jsonpatch.path(*tokens), value)]


def annotation_ops(obj, key, value):
    """Ops setting annotation ``key`` to the string ``value``."""
    return set_ops(obj, ANNOTATIONS + (key,), value)


def remove_annotation_ops(obj, key):
    """Ops removing annotation ``key`` ([] when absent)."""
    if annotation(obj, key) is None:
        return []
    return [jsonpatch.remove(jsonpatch.path(*ANNOTATIONS, key))]
