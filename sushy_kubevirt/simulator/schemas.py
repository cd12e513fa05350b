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

"""Structural schemas of custom resources: prune, default, validate.

kube-apiserver decodes a custom resource in this order: unknown fields
are pruned (and reported for ``fieldValidation``), nulls in non-nullable
fields without a default are dropped, defaults are applied; then the
strategy validates the object against the CRD's ``openAPIV3Schema`` with
kube-openapi and answers 422. ``Schema.check`` does all of it in one walk.

Written here rather than with a JSON-schema library because the causes
must be kube-openapi's, word for word (``a.b[0].c in body must be of type
integer: "string"``, ``must be of type int32: "float64"``), and one
compiled walk keeps the write path fast at 10,000 VMs. Not modelled:
CEL rules (``x-kubernetes-validations``), list-map key uniqueness,
validation ratcheting and ObjectMeta's own validation (name syntax).

The CRD schema files are read from a directory (``load_dir``); they are
the ``openAPIV3Schema`` of each CRD as JSON, with ``group``, ``version``
and ``source`` (the upstream commit) beside it.
"""

import json
import logging
import os
import re

LOG = logging.getLogger(__name__)

ENV = 'SUSHY_KUBEVIRT_SIMULATOR_CRD_SCHEMAS'
DIRECTIVES = ('Strict', 'Warn', 'Ignore')
DEFAULT_DIRECTIVE = 'Warn'  # kube-apiserver without fieldValidation
OBJECT_META = frozenset((
    'name', 'generateName', 'namespace', 'selfLink', 'uid',
    'resourceVersion', 'generation', 'creationTimestamp',
    'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels',
    'annotations', 'ownerReferences', 'finalizers', 'managedFields'))
_DATE_TIME = re.compile(
    r'^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?'
    r'([Zz]|[+-]\d{2}:\d{2})$')


def type_of(value):
    """The JSON type kube-openapi infers for a decoded value."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'boolean'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'number'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, list):
        return 'array'
    return 'object'


def go_value(value):
    """A bad value as field.Error formats it (``%q``, ``%v``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return _number(value)
    if value is None:
        return 'null'
    return json.dumps(value, sort_keys=True)


def _number(value):
    if isinstance(value, float) and value.is_integer():
        return '%d' % value
    return str(value)


def cause(reason, field, body):
    return {'reason': reason, 'message': body, 'field': field}


class Node:
    """One compiled schema node."""

    __slots__ = ('types', 'format', 'nullable', 'enum', 'required',
                 'props', 'additional', 'items', 'preserve', 'pattern',
                 'minimum', 'maximum', 'max_items', 'max_length',
                 'defaults', 'prunes', 'list_type', 'map_keys',
                 'atomic_map')

    def __init__(self, raw):
        if raw.get('x-kubernetes-int-or-string'):
            self.types = ('integer', 'string')
        else:
            self.types = (raw['type'],) if raw.get('type') else ()
        self.format = raw.get('format') or ''
        self.nullable = bool(raw.get('nullable'))
        self.enum = raw.get('enum')
        self.required = tuple(raw.get('required') or ())
        self.props = {k: Node(v) for k, v in
                      (raw.get('properties') or {}).items()}
        additional = raw.get('additionalProperties')
        self.additional = (Node(additional) if isinstance(additional, dict)
                           else None)
        items = raw.get('items')
        self.items = Node(items) if isinstance(items, dict) else None
        self.preserve = bool(raw.get('x-kubernetes-preserve-unknown-fields'))
        # Field ownership granularity (server-side apply).
        self.list_type = raw.get('x-kubernetes-list-type') or 'atomic'
        self.map_keys = tuple(raw.get('x-kubernetes-list-map-keys') or ())
        self.atomic_map = raw.get('x-kubernetes-map-type') == 'atomic'
        pattern = raw.get('pattern')
        self.pattern = None
        if pattern:
            try:
                self.pattern = (pattern, re.compile(pattern))
            except re.error:
                LOG.debug('pattern %r not compiled, not checked', pattern)
        self.minimum = raw.get('minimum')
        self.maximum = raw.get('maximum')
        self.max_items = raw.get('maxItems')
        self.max_length = raw.get('maxLength')
        self.defaults = {k: v['default'] for k, v in
                         (raw.get('properties') or {}).items()
                         if 'default' in v}
        # Objects prune unknown keys unless they preserve them or map them.
        self.prunes = (self.types == ('object',) and not self.preserve
                       and self.additional is None)


class Schema:
    """A resource's structural schema (from a CRD file)."""

    def __init__(self, doc):
        self.group = doc.get('group', '')
        self.version = doc.get('version', '')
        self.source = doc.get('source', '')
        self.root = Node(doc['openAPIV3Schema'])
        # CEL rules are not evaluated, but their presence shows: kube
        # reports them skipped when the schema check failed.
        self.has_rules = 'x-kubernetes-validations' in json.dumps(
            doc['openAPIV3Schema'])

    def check(self, obj):
        """Prune, drop nulls, default and validate ``obj`` in place.

        Returns ``(unknown, causes)``: the pruned field paths (``metadata``
        first, then sorted, as kube-apiserver reports them) and the 422
        causes, formatted like apiextensions-apiserver's.
        """
        unknown, causes = prune_metadata(obj), []
        pruned = []
        _walk(self.root, obj, '', pruned, causes, True)
        unknown.extend(sorted(pruned))
        if causes and self.has_rules:
            causes.append(cause('FieldValueInvalid', '<nil>', (
                'Invalid value: null: some validation rules were not '
                'checked because the object was invalid; correct the '
                'existing errors to complete validation')))
        return unknown, causes


def prune_metadata(obj):
    """Drop ``metadata`` fields outside ObjectMeta; return their paths.

    kube-apiserver does it for every custom resource, schema or not.
    """
    meta = obj.get('metadata')
    if not isinstance(meta, dict):
        return []
    unknown = ['metadata.' + key for key in sorted(set(meta) - OBJECT_META)]
    for path in unknown:
        del meta[path[len('metadata.'):]]
    return unknown


def _walk(node, value, path, pruned, causes, root=False):
    """Check ``value`` against ``node``; False if its type is wrong."""
    if value is None:
        if node.types and not node.nullable:
            _type_error(node, path, 'null', causes)
            return False
        return True
    kind = type_of(value)
    if node.types and not _type_ok(node, kind, value, path, causes):
        return False
    if kind == 'object':
        _object(node, value, path, pruned, causes, root)
    elif kind == 'array':
        if node.max_items is not None and len(value) > node.max_items:
            causes.append(cause('FieldValueTooMany', path,
                                'Too many: %d: must have at most %d items'
                                % (len(value), node.max_items)))
        items = node.items
        if items is not None:
            for idx, item in enumerate(value):
                _walk(items, item, '%s[%d]' % (path, idx), pruned, causes)
    elif kind == 'string':
        _string(node, value, path, causes)
    elif kind in ('integer', 'number'):
        _bounds(node, value, path, causes)
    if node.enum is not None and value not in node.enum:
        causes.append(cause(
            'FieldValueNotSupported', path,
            'Unsupported value: %s: supported values: %s'
            % (go_value(value), ', '.join(
                json.dumps(v if isinstance(v, str) else json.dumps(v))
                for v in node.enum))))
    return True


def _type_ok(node, kind, value, path, causes):
    """kube-openapi's typeValidator (format and type checks)."""
    types = node.types
    if kind in types:
        return True
    if kind == 'number' and 'integer' in types and value.is_integer():
        return True
    if kind == 'integer' and 'number' in types:
        return True
    _type_error(node, path, kind, causes)
    return False


def _type_error(node, path, kind, causes):
    causes.append(_type_cause(path, ','.join(node.types), kind))


def _type_cause(path, type_name, got):
    return cause('FieldValueTypeInvalid', path,
                 'Invalid value: %s: %s in body must be of type %s: %s'
                 % (json.dumps(got), path, type_name, json.dumps(got)))


def _object(node, value, path, pruned, causes, root):
    prefix = path + '.' if path else ''
    props = node.props
    if node.prunes:
        for key in [k for k in value if k not in props]:
            if root and key in ('apiVersion', 'kind', 'metadata'):
                continue
            pruned.append(prefix + key)
            del value[key]
    for key in [k for k, v in value.items() if v is None]:
        sub = props.get(key, node.additional)
        if sub is not None and not sub.nullable and key not in \
                node.defaults:
            del value[key]
    for key, default in node.defaults.items():
        if key not in value:
            value[key] = json.loads(json.dumps(default))
    for key in node.required:
        if key not in value:
            causes.append(cause('FieldValueRequired', prefix + key,
                                'Required value'))
    for key, sub_value in value.items():
        sub = props.get(key)
        if sub is None:
            sub = node.additional
            if sub is None:
                continue
        if root and key == 'metadata':
            continue
        _walk(sub, sub_value, prefix + key, pruned, causes)


def _string(node, value, path, causes):
    if node.max_length is not None and len(value) > node.max_length:
        causes.append(cause('FieldValueTooLong', path,
                            'Too long: may not be longer than %d'
                            % node.max_length))
    if node.pattern is not None and not node.pattern[1].search(value):
        causes.append(_invalid(path, value, "%s in body should match '%s'"
                               % (path, node.pattern[0])))
    if node.format == 'date-time' and not _DATE_TIME.match(value):
        causes.append(cause(
            'FieldValueTypeInvalid', path,
            'Invalid value: %s: %s in body must be of type date-time: %s'
            % (go_value(value), path, go_value(value))))


def _bounds(node, value, path, causes):
    if node.minimum is not None and value < node.minimum:
        causes.append(_invalid(
            path, value, '%s in body should be greater than or equal to %s'
            % (path, _number(node.minimum))))
    if node.maximum is not None and value > node.maximum:
        causes.append(_invalid(
            path, value, '%s in body should be less than or equal to %s'
            % (path, _number(node.maximum))))


def _invalid(path, value, detail):
    return cause('FieldValueInvalid', path,
                 'Invalid value: %s: %s' % (go_value(value), detail))


def load_dir(directory):
    """``{plural.group: Schema}`` from every ``*.json`` in ``directory``.

    Raises ValueError naming the directory or file when it cannot.
    """
    try:
        names = sorted(n for n in os.listdir(directory)
                       if n.endswith('.json'))
    except OSError as exc:
        raise ValueError('CRD schema directory %s: %s'
                         % (directory, exc.strerror or exc))
    if not names:
        raise ValueError('CRD schema directory %s has no *.json schema'
                         % directory)
    schemas = {}
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path) as stream:
                schemas[name[:-len('.json')]] = Schema(json.load(stream))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError('CRD schema file %s: %s' % (path, exc))
    return schemas


def strict_messages(paths):
    return ['unknown field "%s"' % path for path in paths]


def warning_header(message):
    """A ``Warning`` header value as kube-apiserver writes it."""
    return '299 - %s' % json.dumps(message)
