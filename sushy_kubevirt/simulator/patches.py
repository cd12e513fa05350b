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

JSON patches are applied by the ``jsonpatch`` library, one operation at a
time, with kube-apiserver's answers (evanphx/json-patch v4 behind it):

- a body that is not a JSON array of objects is 400, as ``DecodePatch``;
- an operation that does not apply (failed ``test``, missing path, bad
  index, unknown ``op``) is the generic 422 "the server rejected our
  request due to an error in our request" with empty details: the
  handler wraps the library error in ``NewGenericServerResponse``, which
  drops its text;
- a ``test`` of ``null`` passes on a missing path, as in evanphx v4.
"""

import json

import jsonpatch
import jsonpointer

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import storage

JSON_PATCH = 'application/json-patch+json'
MERGE_PATCH = 'application/merge-patch+json'
APPLY_PATCH = 'application/apply-patch+yaml'
STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json'
ACCEPTED = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
_NOT_APPLICABLE = (jsonpatch.JsonPatchException,
                   jsonpointer.JsonPointerException, TypeError, KeyError,
                   IndexError, AttributeError)


def _decode(body):
    try:
        ops = json.loads(body)
    except ValueError as exc:
        raise apistatus.bad_request(str(exc))
    if not isinstance(ops, list):
        raise apistatus.bad_request(
            'json: cannot unmarshal %s into Go value of type jsonpatch.Patch'
            % _go_kind(ops))
    for op in ops:
        if not isinstance(op, dict):
            raise apistatus.bad_request(
                'json: cannot unmarshal %s into Go value of type '
                'jsonpatch.Operation' % _go_kind(op))
    return ops


def _go_kind(value):
    if isinstance(value, bool):
        return 'bool'
    if isinstance(value, (int, float)):
        return 'number'
    return {dict: 'object', list: 'array', str: 'string'}.get(
        type(value), 'null')


def _null_test_on_missing_path(doc, op):
    if op.get('op') != 'test' or op.get('value') is not None:
        return False
    try:
        jsonpointer.resolve_pointer(doc, op.get('path', ''))
    except jsonpointer.JsonPointerException:
        return True
    return False


def json_patch(doc, body):
    """Apply a JSON patch document (bytes) to ``doc``; return the result."""
    ops = _decode(body)
    doc = storage.clone(doc)
    try:
        for op in ops:
            if not _null_test_on_missing_path(doc, op):
                doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
    except _NOT_APPLICABLE:
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
        raise apistatus.bad_request(
            'the body of the request is not valid JSON')
    try:
        return yaml.safe_load(body)
    except yaml.YAMLError as exc:
        raise apistatus.bad_request('error decoding YAML: %s' % exc)


def merge_patch(doc, body):
    patch = _load(body)
    if not isinstance(patch, dict):
        raise apistatus.bad_request(
            'json: cannot unmarshal array into Go value of type '
            'map[string]interface {}')
    return merge(doc, patch)


def apply_patch(doc, body, field_manager):
    """Minimal server-side apply: a merge of the applied configuration.

    ``fieldManager`` is required; ownership and conflicts are not
    modelled.
    """
    if not field_manager:
        raise apistatus.bad_request(
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
            'value: is required for apply patch')
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
