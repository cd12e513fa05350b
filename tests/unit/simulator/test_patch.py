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

"""JSON patch, merge patch and apply."""

import json

import pytest

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import patches

DOC = {'metadata': {'resourceVersion': '5', 'a/b': 1},
       'spec': {'list': [1, 2], 'keep': True}}


def _ops(*ops):
    return json.dumps(list(ops)).encode()


def test_json_patch_operations_do_not_touch_input():
    out = patches.json_patch(DOC, _ops(
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '5'},
        {'op': 'add', 'path': '/spec/list/1', 'value': 9},
        {'op': 'add', 'path': '/spec/list/-', 'value': 3},
        {'op': 'remove', 'path': '/metadata/a~1b'},
        {'op': 'replace', 'path': '/spec/keep', 'value': False},
        {'op': 'copy', 'from': '/spec/list', 'path': '/spec/copy'},
        {'op': 'move', 'from': '/spec/keep', 'path': '/spec/moved'}))
    assert out == {'metadata': {'resourceVersion': '5'},
                   'spec': {'list': [1, 9, 2, 3], 'copy': [1, 9, 2, 3],
                            'moved': False}}
    assert DOC['spec']['list'] == [1, 2]


VM = {'metadata': {'annotations': {'a/b': 'c'}, 'resourceVersion': '7'},
      'spec': {'template': {'spec': {'domain': {'devices': {
          'disks': [{'name': 'root', 'bootOrder': 1},
                    {'name': 'cd', 'cdrom': {}}]}}}}}}


def test_driver_style_patch_gives_the_expected_document():
    # Expected values written by hand (RFC 6902 sections 4.1-4.6).
    ops = _ops(
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '7'},
        {'op': 'remove', 'path': '/metadata/annotations/a~1b'},
        {'op': 'add', 'path': '/metadata/annotations/x~1y', 'value': 'z'},
        {'op': 'remove', 'path':
         '/spec/template/spec/domain/devices/disks/0/bootOrder'},
        {'op': 'add', 'path':
         '/spec/template/spec/domain/devices/disks/1/bootOrder',
         'value': 1})
    assert patches.json_patch(VM, ops) == {
        'metadata': {'annotations': {'x/y': 'z'}, 'resourceVersion': '7'},
        'spec': {'template': {'spec': {'domain': {'devices': {
            'disks': [{'name': 'root'},
                      {'name': 'cd', 'cdrom': {}, 'bootOrder': 1}]}}}}}}
    assert VM['metadata']['annotations'] == {'a/b': 'c'}


def test_null_test_passes_on_a_missing_path():
    # evanphx/json-patch v4 (kube-apiserver): a missing value equals null.
    out = patches.json_patch(DOC, _ops(
        {'op': 'test', 'path': '/missing', 'value': None}))
    assert out == DOC


@pytest.mark.parametrize('op', [
    {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '4'},
    {'op': 'test', 'path': '/missing', 'value': 1},
    {'op': 'remove', 'path': '/spec/none'},
    {'op': 'nope', 'path': '/spec'},
    {'op': 'remove', 'path': '/spec/list/-'},
    {'op': 'move', 'from': '/spec/none', 'path': '/spec/x'},
    {'op': 'replace', 'path': '/spec/none', 'value': 1},
    {'op': 'add', 'path': '/spec/list/7', 'value': 1},
    {'op': 'add', 'path': '/no/such/parent', 'value': 1},
])
def test_json_patch_not_applicable_is_generic_422(op):
    with pytest.raises(apistatus.ApiError) as exc:
        patches.json_patch(DOC, _ops(op))
    assert exc.value.code == 422
    assert exc.value.to_status()['details'] == {}
    assert exc.value.message == ('the server rejected our request due to '
                                 'an error in our request')


@pytest.mark.parametrize('body, message', [
    (b'{"op": "add"}', 'error decoding patch: json: cannot unmarshal object '
     'into Go value of type []handlers.jsonPatchOp'),
    (b'["add"]', 'error decoding patch: json: cannot unmarshal string into '
     'Go value of type handlers.jsonPatchOp'),
    (b'not json', None)])
def test_malformed_json_patch_is_400(body, message):
    with pytest.raises(apistatus.ApiError) as exc:
        patches.json_patch(DOC, body)
    assert exc.value.code == 400
    if message:
        assert exc.value.message == message


def test_merge_patch_rfc7386():
    out = patches.merge_patch(DOC, b'{"spec": {"keep": null, "list": [3]},'
                              b' "status": {"x": 1}}')
    assert out['spec'] == {'list': [3]}
    assert out['status'] == {'x': 1}


def test_apply_requires_field_manager_and_decodes_yaml():
    with pytest.raises(apistatus.ApiError) as exc:
        patches.apply(patches.APPLY_PATCH, DOC, b'{}')
    assert exc.value.code == 422
    assert exc.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required '
        'value: is required for apply patch')
    config = patches.apply(patches.APPLY_PATCH, DOC,
                           b'spec:\n  keep: false\n', 'mgr')
    assert config == {'spec': {'keep': False}}


def test_merge_patch_decoding_errors_in_kube_words():
    with pytest.raises(apistatus.ApiError) as exc:
        patches.merge_patch(DOC, b'[1]')
    assert exc.value.code == 400
    assert exc.value.message == (
        'error decoding patch: json: cannot unmarshal array into Go value '
        'of type map[string]interface {}')


def test_strategic_merge_of_a_built_in_is_a_merge_and_other_types_415():
    out = patches.apply(patches.STRATEGIC_MERGE_PATCH, DOC,
                        b'{"spec": {"keep": null}}')
    assert 'keep' not in out['spec']
    with pytest.raises(apistatus.ApiError) as exc:
        patches.apply('text/plain', DOC, b'{}')
    assert exc.value.code == 415
