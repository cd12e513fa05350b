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

"""JSON patch (RFC 6902), merge patch (RFC 7386) and a minimal apply.

Errors are raised as kube-apiserver raises them: a malformed JSON patch
is 400; a patch that does not apply (failed ``test``, missing path) is
the generic 422 "the server rejected our request due to an error in our
request" with empty details, because kube-apiserver wraps the library
error in ``NewGenericServerResponse`` and drops its text.
"""

import json

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import storage

JSON_PATCH = 'application/json-patch+json'
MERGE_PATCH = 'application/merge-patch+json'
APPLY_PATCH = 'application/apply-patch+yaml'
STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json'
ACCEPTED = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)


class NotApplicable(Exception):
    """The JSON patch does not apply to the document."""


def _pointer(path):
    if path == '':
        return []
    if not path.startswith('/'):
        raise NotApplicable('invalid pointer %r' % path)
    return [p.replace('~1', '/').replace('~0', '~')
            for p in path[1:].split('/')]


def _index(container, token, allow_end=False):
    if allow_end and token == '-':
        return len(container)
    if not token.isdigit() or (token != '0' and token.startswith('0')):
        raise NotApplicable('bad index %r' % token)
    index = int(token)
    if index > len(container) or (index == len(container) and
                                  not allow_end):
        raise NotApplicable('index out of range')
    return index


def _parent(doc, parts):
    node = doc
    for token in parts[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token)]
        else:
            raise NotApplicable('missing path')
    return node


def _get(doc, parts):
    if not parts:
        return doc
    parent = _parent(doc, parts)
    token = parts[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise NotApplicable('missing path')
        return parent[token]
    if isinstance(parent, list):
        return parent[_index(parent, token)]
    raise NotApplicable('missing path')


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _parent(doc, parts)
    token = parts[-1]
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, allow_end=True), value)
    else:
        raise NotApplicable('missing path')
    return doc


def _remove(doc, parts):
    if not parts:
        raise NotApplicable('cannot remove the root')
    parent = _parent(doc, parts)
    token = parts[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise NotApplicable('missing path')
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(_index(parent, token))
    raise NotApplicable('missing path')


def _decode(body):
    try:
        ops = json.loads(body)
    except ValueError as exc:
        raise apistatus.bad_request(str(exc))
    if not isinstance(ops, list):
        raise apistatus.bad_request('json: cannot unmarshal object into Go value '
                                    'of type jsonpatch.Patch')
    for op in ops:
        if not isinstance(op, dict) or op.get('op') not in (
                'add', 'remove', 'replace', 'move', 'copy', 'test'):
            raise apistatus.bad_request('Unexpected kind: %s'
                                        % (op.get('op') if isinstance(op, dict)
                                           else op))
    return ops


def json_patch(doc, body):
    """Apply a JSON patch document (bytes) to ``doc``; return the result."""
    ops = _decode(body)
    doc = storage.clone(doc)
    try:
        for op in ops:
            kind = op['op']
            parts = _pointer(op.get('path', ''))
            if kind in ('add', 'replace', 'test') and 'value' not in op:
                raise NotApplicable('missing value')
            if kind == 'add':
                doc = _add(doc, parts, storage.clone(op['value']))
            elif kind == 'remove':
                _remove(doc, parts)
            elif kind == 'replace':
                _get(doc, parts)
                if parts:
                    _remove(doc, parts)
                doc = _add(doc, parts, storage.clone(op['value']))
            elif kind == 'test':
                if _get(doc, parts) != op['value']:
                    raise NotApplicable('test failed')
            else:
                source = _pointer(op.get('from', ''))
                value = storage.clone(_get(doc, source))
                if kind == 'move':
                    _remove(doc, source)
                doc = _add(doc, parts, value)
    except NotApplicable:
        raise apistatus.patch_not_applied()
    return doc


def merge(target, patch):
    """RFC 7386 merge; returns a new value."""
    if not isinstance(patch, dict):
        return storage.clone(patch)
    result = storage.clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def _load(body):
    try:
        return json.loads(body)
    except ValueError:
        pass
    try:
        import yaml
    except ImportError:
        raise apistatus.bad_request('the body of the request is not valid JSON')
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise apistatus.bad_request('error decoding YAML: %s' % exc)


def merge_patch(doc, body):
    patch = _load(body)
    if not isinstance(patch, dict):
        raise apistatus.bad_request('json: cannot unmarshal array into Go value of '
                                    'type map[string]interface {}')
    return merge(doc, patch)


def apply_patch(doc, body, field_manager):
    """Minimal server-side apply: a merge of the applied configuration.

    ``fieldManager`` is required; ownership and conflicts are not
    modelled.
    """
    if not field_manager:
        raise apistatus.bad_request('PatchOptions.meta.k8s.io "" is invalid: '
                                    'fieldManager: Required value: is required '
                                    'for apply patch')
    patch = _load(body)
    if not isinstance(patch, dict):
        raise apistatus.bad_request('apply patch must be an object')
    return merge(doc or {}, patch)


def apply(content_type, doc, body, field_manager=None):
    """Dispatch on the patch media type (415 for anything else)."""
    media = (content_type or '').split(';')[0].strip()
    if media == JSON_PATCH:
        return json_patch(doc, body)
    if media == MERGE_PATCH:
        return merge_patch(doc, body)
    if media == APPLY_PATCH:
        return apply_patch(doc, body, field_manager)
    raise apistatus.unsupported_media_type(ACCEPTED)
