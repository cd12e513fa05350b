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

"""Built-in types' decoding, defaulting and validation (Secrets).

As kube-apiserver's Secret strategy: ``data`` values must be base64 (400,
the decoder's words), ``stringData`` is folded into ``data``, ``type``
defaults to ``Opaque`` and is immutable, ``data`` keys must be config
keys, and ``immutable: true`` freezes ``data``; an empty ``data`` is
omitted, as Go's encoder does.
"""

import base64
import re

from sushy_kubevirt.simulator import apistatus

_BASE64 = re.compile(r'[A-Za-z0-9+/=]')
_CONFIG_KEY = re.compile(r'^[-._a-zA-Z0-9]+$')
_KEY_MESSAGE = (
    "a valid config key must consist of alphanumeric characters, '-', "
    "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
    "used for validation is '[-._a-zA-Z0-9]+')")


def admit_secret(rt, new, old):
    """Decode, fold, default and validate a Secret write in place."""
    data = new.get('data') or {}
    for value in data.values():
        _check_base64(rt, value)
    string_data = new.pop('stringData', None) or {}
    for key, value in string_data.items():
        data[key] = base64.b64encode(value.encode()).decode()
    if data:
        new['data'] = data
    else:
        new.pop('data', None)
    new.setdefault('type', 'Opaque')
    name = new['metadata'].get('name', '')
    causes = [apistatus.invalid_value('data[%s]' % key, _quote(key),
                                      _KEY_MESSAGE)
              for key in sorted(data) if not _CONFIG_KEY.match(key)]
    if old is not None:
        if new['type'] != old.get('type'):
            causes.insert(0, apistatus.invalid_value(
                'type', _quote(new['type']), 'field is immutable'))
        if old.get('immutable') and data != (old.get('data') or {}):
            causes.append(apistatus.forbidden_field(
                'data', 'field is immutable when `immutable` is set'))
    if causes:
        raise apistatus.invalid(rt, name, causes, group='')


def _check_base64(rt, value):
    bad = next((i for i, c in enumerate(str(value))
                if not _BASE64.match(c)), None)
    if bad is None and len(str(value)) % 4:
        bad = len(str(value)) - len(str(value)) % 4
    if bad is not None:
        raise apistatus.bad_request(
            '%s in version "%s" cannot be handled as a %s: illegal base64 '
            'data at input byte %d' % (rt.kind, rt.version, rt.kind, bad))


def _quote(text):
    return '"%s"' % text.replace('\\', '\\\\').replace('"', '\\"')
