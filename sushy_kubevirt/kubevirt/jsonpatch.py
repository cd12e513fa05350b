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

"""RFC 6902 JSON-patch operation builders, applied by ``jsonpatch``.

Paths are RFC 6901 JSON pointers: ``path('metadata', 'annotations',
'sushy-kubevirt.io/bios')`` gives
``/metadata/annotations/sushy-kubevirt.io~1bios``. Builders return plain
dicts; lists of them are sent as ``application/json-patch+json``.
:func:`apply` previews a patch on a cached object with the ``jsonpatch``
and ``jsonpointer`` libraries.
"""

import jsonpatch
import jsonpointer


def escape(token):
    """Escape a JSON-pointer token: ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return jsonpointer.escape(str(token))


def unescape(token):
    """Inverse of :func:`escape`."""
    return jsonpointer.unescape(token)


def path(*tokens):
    """JSON pointer made of the escaped ``tokens`` ('' for no tokens)."""
    return jsonpointer.JsonPointer.from_parts(
        [str(t) for t in tokens]).path


def test(path, value):
    """A ``test`` operation."""
    return {'op': 'test', 'path': path, 'value': value}


def add(path, value):
    """An ``add`` operation (replaces an existing object member)."""
    return {'op': 'add', 'path': path, 'value': value}


def replace(path, value):
    """A ``replace`` operation (the target must exist)."""
    return {'op': 'replace', 'path': path, 'value': value}


def remove(path):
    """A ``remove`` operation (the target must exist)."""
    return {'op': 'remove', 'path': path}


class PatchError(ValueError):
    """An operation failed: missing path, bad index or failed test."""


def apply(doc, ops):
    """Return a copy of ``doc`` with ``ops`` applied (RFC 6902).

    ``doc`` is not modified. Raises :class:`PatchError` when an operation
    fails.
    """
    try:
        return jsonpatch.apply_patch(doc, list(ops), in_place=False)
    except (jsonpatch.JsonPatchException,
            jsonpointer.JsonPointerException) as exc:
        raise PatchError(str(exc)) from exc
