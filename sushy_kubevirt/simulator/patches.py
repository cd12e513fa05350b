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

"""JSON patch (RFC 6902), merge patch (RFC 7386) and apply configurations;
strategic merge patches of built-in types are merge patches.

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
        raise apistatus.patch_not_decoded(str(exc))
    if not isinstance(ops, list):
        raise apistatus.patch_not_decoded(
            'json: cannot unmarshal %s into Go value of type '
            '[]handlers.jsonPatchOp' % _go_kind(ops))
    for op in ops:
        if not isinstance(op, dict):
            raise apistatus.patch_not_decoded(
                'json: cannot unmarshal %s into Go value of type '
                'handlers.jsonPatchOp' % _go_kind(op))
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
    try:
        patch = json.loads(body)
    except ValueError as exc:
        raise apistatus.patch_not_decoded(str(exc))
    if not isinstance(patch, dict):
        raise apistatus.patch_not_decoded(
            'json: cannot unmarshal %s into Go value of type '
            'map[string]interface {}' % _go_kind(patch))
    return merge(doc, patch)


def apply_config(body, field_manager):
    """The applied configuration of an apply patch (JSON or YAML).

    ``fieldManager`` is required (422); the merge and field ownership are
    ``fieldmanager.apply``'s.
    """
    if not field_manager:
        raise apistatus.invalid('PatchOptions', '', [apistatus.field_cause(
            'fieldManager', 'FieldValueRequired',
            'Required value: is required for apply patch')],
            group='meta.k8s.io')
    patch = _load(body)
    if not isinstance(patch, dict):
        raise apistatus.bad_request('apply patch must be an object')
    return patch


def apply(content_type, doc, body, field_manager=None):
    """Dispatch on the patch media type (415 for anything else).

    JSON and merge patches return the patched ``doc``, an apply patch its
    configuration.
    """
    media = (content_type or '').split(';')[0].strip()
    if media == JSON_PATCH:
        return json_patch(doc, body)
    if media in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        # Built-in types only (the caller refuses it on custom ones); the
        # modelled built-ins have no list with a patch merge key.
        return merge_patch(doc, body)
    if media == APPLY_PATCH:
        return apply_config(body, field_manager)
    raise apistatus.unsupported_media_type(ACCEPTED)
