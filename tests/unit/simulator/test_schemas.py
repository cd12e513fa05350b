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

"""The structural schema walk on a small schema, causes written by hand.

The messages follow kube-openapi's validators as apiextensions-apiserver
turns them into field errors (see the module docstring).
"""

import pytest

from sushy_kubevirt.simulator import schemas

SCHEMA = schemas.Schema({'openAPIV3Schema': {
    'type': 'object',
    'properties': {
        'apiVersion': {'type': 'string'},
        'kind': {'type': 'string'},
        'metadata': {'type': 'object'},
        'spec': {
            'type': 'object',
            'required': ['size'],
            'properties': {
                'size': {'type': 'integer', 'format': 'int32',
                         'minimum': 1, 'maximum': 8},
                'big': {'type': 'integer', 'format': 'int64'},
                'ratio': {'type': 'number'},
                'mode': {'type': 'string', 'enum': ['a', 'b']},
                'level': {'type': 'integer', 'enum': [1, 2]},
                'name': {'type': 'string', 'maxLength': 3,
                         'pattern': '^[a-z]+$'},
                'when': {'type': 'string', 'format': 'date-time',
                         'nullable': True},
                'quantity': {'x-kubernetes-int-or-string': True,
                             'anyOf': [{'type': 'integer'},
                                       {'type': 'string'}]},
                'labels': {'type': 'object',
                           'additionalProperties': {'type': 'string'}},
                'free': {'type': 'object',
                         'x-kubernetes-preserve-unknown-fields': True,
                         'properties': {'known': {'type': 'boolean'}}},
                'items': {'type': 'array', 'maxItems': 2,
                          'items': {'type': 'object', 'properties': {
                              'id': {'type': 'integer'}}}},
                'flag': {'type': 'boolean'},
                'tier': {'type': 'string', 'default': 'gold'},
            }}}}})


def check(spec, **top):
    obj = dict({'apiVersion': 'g/v1', 'kind': 'K',
                'metadata': {'name': 'x'}, 'spec': spec}, **top)
    unknown, causes = SCHEMA.check(obj)
    return obj, unknown, {c['field']: (c['reason'], c['message'])
                          for c in causes}


def test_a_valid_object_passes_and_gets_its_defaults():
    obj, unknown, causes = check({
        'size': 2, 'big': 2 ** 40, 'ratio': 1, 'mode': 'a', 'level': 2,
        'name': 'ab', 'when': '2026-01-01T00:00:00Z', 'quantity': '2Gi',
        'labels': {'a': 'b'}, 'free': {'known': True, 'other': [1]},
        'items': [{'id': 1}], 'flag': False})
    assert (unknown, causes) == ([], {})
    assert obj['spec']['tier'] == 'gold'
    assert obj['spec']['free']['other'] == [1]


def test_unknown_fields_are_pruned_and_reported_metadata_first():
    obj, unknown, causes = check({'size': 1, 'zz': 1, 'aa': {'b': 1},
                                  'items': [{'id': 1, 'extra': 2}]},
                                 status={'x': 1})
    assert causes == {}
    assert unknown == ['spec.aa', 'spec.items[0].extra', 'spec.zz',
                       'status']
    assert 'zz' not in obj['spec'] and 'status' not in obj
    assert obj['spec']['items'] == [{'id': 1}]
    meta = {'apiVersion': 'g/v1', 'kind': 'K',
            'metadata': {'name': 'x', 'bogus': 1}, 'spec': {'size': 1}}
    assert SCHEMA.check(meta)[0] == ['metadata.bogus']
    assert meta['metadata'] == {'name': 'x'}


@pytest.mark.parametrize('field, value, reason, message', [
    ('size', '4', 'FieldValueTypeInvalid',
     'Invalid value: "string": spec.size in body must be of type integer: '
     '"string"'),
    # The type comes before the format (int32): kube-apiserver's words.
    ('size', 1.5, 'FieldValueTypeInvalid',
     'Invalid value: "number": spec.size in body must be of type integer: '
     '"number"'),
    ('size', True, 'FieldValueTypeInvalid',
     'Invalid value: "boolean": spec.size in body must be of type integer: '
     '"boolean"'),
    ('size', [1], 'FieldValueTypeInvalid',
     'Invalid value: "array": spec.size in body must be of type integer: '
     '"array"'),
    ('size', 0, 'FieldValueInvalid',
     'Invalid value: 0: spec.size in body should be greater than or equal '
     'to 1'),
    ('size', 9, 'FieldValueInvalid',
     'Invalid value: 9: spec.size in body should be less than or equal to '
     '8'),
    ('ratio', 'x', 'FieldValueTypeInvalid',
     'Invalid value: "string": spec.ratio in body must be of type number: '
     '"string"'),
    ('mode', 'c', 'FieldValueNotSupported',
     'Unsupported value: "c": supported values: "a", "b"'),
    ('level', 3, 'FieldValueNotSupported',
     'Unsupported value: 3: supported values: "1", "2"'),
    ('name', 'abcd', 'FieldValueTooLong',
     'Too long: may not be longer than 3'),
    ('name', 'A', 'FieldValueInvalid',
     'Invalid value: "A": spec.name in body should match \'^[a-z]+$\''),
    ('when', 'yesterday', 'FieldValueTypeInvalid',
     'Invalid value: "yesterday": spec.when in body must be of type '
     'date-time: "yesterday"'),
    ('quantity', True, 'FieldValueTypeInvalid',
     'Invalid value: "boolean": spec.quantity in body must be of type '
     'integer,string: "boolean"'),
    ('labels', {'a': 1}, None, None),
    ('items', [{}, {}, {}], 'FieldValueTooMany',
     'Too many: 3: must have at most 2 items'),
    ('flag', 'true', 'FieldValueTypeInvalid',
     'Invalid value: "string": spec.flag in body must be of type boolean: '
     '"string"'),
])
def test_each_rule_answers_in_kube_words(field, value, reason, message):
    _obj, _unknown, causes = check({'size': 1, field: value})
    if field == 'labels':
        assert causes == {'spec.labels.a': (
            'FieldValueTypeInvalid',
            'Invalid value: "integer": spec.labels.a in body must be of '
            'type string: "integer"')}
        return
    assert causes == {'spec.' + field: (reason, message)}


def test_required_and_nulls():
    obj, _unknown, causes = check({'when': None, 'ratio': None,
                                   'items': [None]})
    assert causes == {
        'spec.size': ('FieldValueRequired', 'Required value'),
        'spec.items[0]': ('FieldValueTypeInvalid',
                          'Invalid value: "null": spec.items[0] in body '
                          'must be of type object: "null"')}
    # nullable keeps null; a non-nullable null without a default is dropped
    assert obj['spec']['when'] is None and 'ratio' not in obj['spec']


def test_integral_floats_and_int64():
    _obj, _unknown, causes = check({'size': 2.0, 'big': 2 ** 62})
    assert causes == {}


def test_warning_header_format():
    assert schemas.warning_header('unknown field "spec.foo"') == \
        '299 - "unknown field \\"spec.foo\\""'
