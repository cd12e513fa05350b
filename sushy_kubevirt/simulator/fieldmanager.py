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

"""Field ownership (``managedFields``) and server-side apply.

A field set is a dict ``{path: value}``: a path is a tuple of FieldsV1
keys (``f:name``, ``k:{"uid":...}`` for an item of a keyed list, ``v:...``
for an item of a set), the value that of a leaf (``MAP`` for a map or
list that is itself a member, as kube's ``.``). Granularity follows the
structured-merge-diff rules kube-apiserver applies: maps are granular,
lists atomic unless the schema says ``set``/``map``; in ``metadata``
labels and annotations are maps, ``finalizers`` a set and
``ownerReferences`` a list keyed by ``uid`` of atomic items. Custom
resources' objects are maps (members); a built-in type's structs are not,
its maps are.

``update`` records an Update: the manager takes the fields it added or
changed, every other manager loses them, and removed fields leave every
set. ``apply`` merges an applied configuration: fields the manager
applied before and no longer does are removed unless someone else owns
them; a field owned by another manager with another value is a conflict
(409) unless ``force``, which takes it over.
"""

import json

from sushy_kubevirt.simulator import apistatus

MAP = object()
MEMO_SIZE = 4096
_MEMO = {}    # key with id(stored data) -> (that data, derived value)
_TREES = {}   # frozenset of paths -> FieldsV1 tree
SKIP_META = frozenset((
    'name', 'namespace', 'uid', 'resourceVersion', 'generation',
    'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds',
    'managedFields', 'selfLink'))
BUILTIN_MAPS = frozenset(('labels', 'annotations', 'data', 'binaryData',
                          'stringData', 'parameters', 'requests', 'limits',
                          'capacity', 'matchLabels'))


def fields(rt, obj, schema=None, subresource=None):
    """The field set of ``obj`` as its manager would own it."""
    out = {}
    for key, value in obj.items():
        if key in ('apiVersion', 'kind'):
            continue
        if (key == 'status') != (subresource == 'status') and \
                (rt.status_subresource or subresource == 'status'):
            continue
        path = ('f:' + key,)
        if key == 'metadata' and isinstance(value, dict):
            _metadata(value, out)
        else:
            node = schema.root.props.get(key) if schema else None
            _value(rt.custom, key, value, node, path, out)
    if rt.key == '/namespaces':   # the strategy's, after field tracking
        if (obj.get('spec') or {}).get('finalizers') == ['kubernetes']:
            out.pop(('f:spec', 'f:finalizers'), None)
    return out


def _metadata(meta, out):
    for key, value in meta.items():
        if key in SKIP_META:
            continue
        path = ('f:metadata', 'f:' + key)
        if key in ('labels', 'annotations') and isinstance(value, dict):
            out[path] = MAP
            for name, item in value.items():
                out[path + ('f:' + name,)] = item
        elif key == 'finalizers' and isinstance(value, list):
            out[path] = MAP
            for item in value:
                out[path + ('v:' + json.dumps(item),)] = item
        elif key == 'ownerReferences' and isinstance(value, list):
            out[path] = MAP
            for ref in value:
                out[path + ('k:' + _key({'uid': ref.get('uid')}),)] = ref
        else:
            out[path] = value


def _value(custom, name, value, node, path, out):
    if isinstance(value, dict) and not (node and node.atomic_map):
        if custom or name in BUILTIN_MAPS:
            out[path] = MAP
        for key, item in value.items():
            sub = None
            if node is not None:
                sub = node.props.get(key) or node.additional
            _value(custom, key, item, sub, path + ('f:' + key,), out)
    elif isinstance(value, list) and node is not None and \
            node.list_type in ('set', 'map'):
        out[path] = MAP
        for item in value:
            if node.list_type == 'set':
                out[path + ('v:' + json.dumps(item),)] = item
            elif isinstance(item, dict):
                key = path + ('k:' + _key({k: item.get(k)
                                           for k in node.map_keys}),)
                out[key] = MAP
                for field, sub_value in item.items():
                    sub = node.items.props.get(field) if node.items else None
                    _value(custom, field, sub_value, sub,
                           key + ('f:' + field,), out)
    else:
        out[path] = value


def _key(doc):
    return json.dumps(doc, separators=(',', ':'), sort_keys=True)


def to_fields_v1(paths):
    """FieldsV1 JSON for a set of paths."""
    tree, members = {}, []
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        members.append(node)
    for node in members:
        if node and '.' not in node:
            node['.'] = {}
    return tree


def from_fields_v1(tree, prefix=()):
    """The paths of a FieldsV1 JSON tree."""
    paths = set()
    for key, sub in (tree or {}).items():
        if key == '.':
            continue
        path = prefix + (key,)
        if not sub or '.' in sub:
            paths.add(path)
        paths |= from_fields_v1(sub, path)
    return paths


def _memo(key, identity, compute):
    """A bounded memo of values derived from immutable stored data."""
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is identity:
        return hit[1]
    if len(_MEMO) >= MEMO_SIZE:
        _MEMO.clear()
    value = compute()
    _MEMO[key] = (identity, value)
    return value


def _entries(obj):
    """``[(entry without fieldsV1, paths)]`` of an object's managers."""
    out = []
    for e in (obj or {}).get('metadata', {}).get('managedFields') or ():
        tree = e.get('fieldsV1')
        paths = _memo(('paths', id(tree)), tree,
                      lambda tree=tree: frozenset(from_fields_v1(tree)))
        out.append((dict((k, v) for k, v in e.items() if k != 'fieldsV1'),
                    set(paths)))
    return out


def _tree(paths):
    frozen = frozenset(paths)
    hit = _TREES.get(frozen)
    if hit is None:
        if len(_TREES) >= MEMO_SIZE:
            _TREES.clear()
        hit = _TREES[frozen] = to_fields_v1(frozen)
    return hit


def _store(obj, entries):
    """Write ``entries`` (non-empty ones, kube's order) into ``obj``.

    Equal field sets share one (never modified) FieldsV1 tree.
    """
    kept = [dict(entry, fieldsV1=_tree(paths))
            for entry, paths in entries if paths]
    kept.sort(key=lambda e: (e['operation'], e.get('time', ''),
                             e['manager'], e.get('subresource', '')))
    if kept:
        obj['metadata']['managedFields'] = kept
    else:
        obj['metadata'].pop('managedFields', None)


def _entry(obj, manager, operation, subresource, now):
    entry = {'manager': manager, 'operation': operation,
             'apiVersion': obj.get('apiVersion', ''), 'fieldsType':
             'FieldsV1'}
    if now:
        entry['time'] = now
    if subresource:
        entry['subresource'] = subresource
    return entry


def _same(entry, manager, operation, subresource):
    return (entry['manager'], entry['operation'],
            entry.get('subresource')) == (manager, operation, subresource)


def _cached_fields(rt, obj, schema, subresource):
    """``fields`` of a stored (immutable) object, computed once."""
    return _memo(('fields', id(obj), subresource), obj,
                 lambda: fields(rt, obj, schema, subresource))


def update(rt, new, old, manager, subresource=None, schema=None, now=''):
    """Record an Update by ``manager`` turning ``old`` into ``new``.

    ``old`` must be the stored object (its field set is memoised); ``new``
    is stored next, so its set is memoised too.
    """
    after = _cached_fields(rt, new, schema, subresource)
    before = _cached_fields(rt, old, schema, subresource) if old else {}
    changed = {p for p, v in after.items()
               if p not in before or (v is not MAP and before[p] != v)}
    removed = set(before) - set(after)
    entries, mine = [], None
    for entry, paths in _entries(old):
        if _same(entry, manager, 'Update', subresource):
            mine = (entry, paths)
            continue
        entries.append((entry, paths - changed - removed))
    if changed:
        paths = (mine[1] if mine else set()) | changed
        entries.append((_entry(new, manager, 'Update', subresource, now),
                        paths - removed))
    elif mine:
        entries.append((mine[0], mine[1] - removed))
    _store(new, entries)


def apply(rt, current, config, manager, force, schema=None, now=''):
    """The object after ``manager`` applies ``config`` to ``current``."""
    applied = fields(rt, config, schema)
    live = fields(rt, current, schema) if current else {}
    entries, previous, conflicts = [], set(), []
    for entry, paths in _entries(current):
        if _same(entry, manager, 'Apply', None):
            previous = paths
            continue
        clash = sorted(p for p in paths & set(applied)
                       if applied[p] is not MAP and p in live and
                       live[p] != applied[p])
        conflicts.extend((entry, p) for p in clash)
        entries.append((entry, paths - set(clash) if force else paths))
    if conflicts and not force:
        raise _conflict(conflicts)
    others = set().union(*(paths for _e, paths in entries))
    new = _merge(_prune(current or {}, previous - set(applied) - others),
                 config)
    changed = not current or _strip(new) != _strip(current)
    entries.append((_entry(config, manager, 'Apply', None,
                           now if changed else _time(current, manager)),
                    set(applied)))
    new.setdefault('metadata', {})
    _store(new, entries)
    return new


def _time(obj, manager):
    for entry, _paths in _entries(obj):
        if _same(entry, manager, 'Apply', None):
            return entry.get('time', '')
    return ''


def _strip(obj):
    meta = {k: v for k, v in obj.get('metadata', {}).items()
            if k != 'managedFields'}
    return dict(obj, metadata=meta)


def _prune(obj, paths):
    """A copy of ``obj`` without the fields at ``paths`` (deepest first)."""
    obj = json.loads(json.dumps(obj))
    for path in sorted(paths, key=len, reverse=True):
        parent = obj
        for element in path[:-1]:
            parent = _child(parent, element)
            if parent is None:
                break
        if isinstance(parent, dict) and path[-1].startswith('f:'):
            value = parent.get(path[-1][2:])
            if not isinstance(value, (dict, list)) or not value:
                parent.pop(path[-1][2:], None)
        elif isinstance(parent, list):
            parent[:] = [i for i in parent if _child([i], path[-1]) is None]
    return obj


def _child(value, element):
    if isinstance(value, dict) and element.startswith('f:'):
        return value.get(element[2:])
    if isinstance(value, list):
        for item in value:
            if element.startswith('v:') and json.dumps(item) == element[2:]:
                return item
            if element.startswith('k:') and isinstance(item, dict) and all(
                    item.get(k) == v for k, v in
                    json.loads(element[2:]).items()):
                return item
    return None


def _merge(target, patch):
    """Apply semantics: maps merge, everything else is replaced."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return json.loads(json.dumps(patch))
    out = dict(target)
    for key, value in patch.items():
        out[key] = _merge(target.get(key), value)
    return out


def _conflict(conflicts):
    def who(entry):
        if entry['operation'] == 'Update':
            return '"%s" using %s' % (entry['manager'], entry['apiVersion'])
        return '"%s"' % entry['manager']
    causes = [{'reason': 'FieldManagerConflict',
               'message': 'conflict with %s' % who(entry),
               'field': path_string(path)} for entry, path in conflicts]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = 'Apply failed with 1 conflict: conflict with %s: %s' % (
            who(entry), path_string(path))
    else:
        lines = []
        for name in sorted({e['manager'] for e, _p in conflicts}):
            group = [(e, p) for e, p in conflicts if e['manager'] == name]
            lines.append('conflicts with %s:' % who(group[0][0]))
            lines.extend('- %s' % path_string(p) for _e, p in group)
        message = 'Apply failed with %d conflicts: %s' % (
            len(conflicts), '\n'.join(lines))
    return apistatus.ApiError(409, 'Conflict', message, causes=causes)


def path_string(path):
    """A path as structured-merge-diff prints it (``.spec.size``)."""
    text = ''
    for element in path:
        kind, rest = element[:2], element[2:]
        if kind == 'f:':
            text += '.' + rest
        elif kind == 'k:':
            text += '[%s]' % ','.join('%s=%s' % (k, json.dumps(v)) for k, v
                                      in sorted(json.loads(rest).items()))
        else:
            text += '[=%s]' % rest
    return text
