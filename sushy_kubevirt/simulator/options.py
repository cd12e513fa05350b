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

"""List and watch query options, validated as kube's ListOptions.

Invalid combinations answer kube's 422 ``ListOptions.meta.k8s.io "" is
invalid: ...`` with one cause per problem; malformed numbers are 400.
"""

import json
import re

from sushy_kubevirt.simulator import apistatus


def check_list(q):
    """Raise 400/422 if the list options ``q`` are malformed/inconsistent."""
    check_numbers(q)
    errors = []
    match = q.get('resourceVersionMatch', '')
    if match:
        if not q.get('resourceVersion'):
            errors.append(apistatus.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch is forbidden '
                'unless resourceVersion is provided'))
        if q.get('continue'):
            errors.append(_match_with_continue())
        if match not in ('Exact', 'NotOlderThan'):
            errors.append(apistatus.not_supported(
                'resourceVersionMatch', match, ['Exact', 'NotOlderThan', '']))
        if match == 'Exact' and q.get('resourceVersion') == '0':
            errors.append(apistatus.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch "exact" is '
                'forbidden for resourceVersion "0"'))
    if 'sendInitialEvents' in q:
        errors.append(apistatus.forbidden_field(
            'sendInitialEvents', 'sendInitialEvents is forbidden for list'))
    _raise(errors)


def check_watch(q, watchlist_enabled):
    """Raise 400/422 if the watch options ``q`` are malformed/inconsistent."""
    check_numbers(q)
    errors = []
    match = q.get('resourceVersionMatch', '')
    if 'sendInitialEvents' in q:
        if match != 'NotOlderThan':
            errors.append(apistatus.forbidden_field(
                'resourceVersionMatch', 'sendInitialEvents requires setting '
                'resourceVersionMatch to NotOlderThan'))
        if not watchlist_enabled:
            errors.append(apistatus.forbidden_field(
                'sendInitialEvents', 'sendInitialEvents is forbidden for '
                'watch unless the WatchList feature gate is enabled'))
    if match:
        if 'sendInitialEvents' not in q:
            errors.append(apistatus.forbidden_field(
                'resourceVersionMatch', 'resourceVersionMatch is forbidden '
                'for watch unless sendInitialEvents is provided'))
        if match != 'NotOlderThan':
            errors.append(apistatus.not_supported(
                'resourceVersionMatch', match, ['NotOlderThan']))
        if q.get('continue'):
            errors.append(_match_with_continue())
    _raise(errors)


def _match_with_continue():
    return apistatus.forbidden_field(
        'resourceVersionMatch',
        'resourceVersionMatch is forbidden when continue is provided')


def _raise(errors):
    if errors:
        raise apistatus.invalid('ListOptions', '', errors, group='meta.k8s.io')


def check_numbers(q):
    """400 for a ``limit`` or ``timeoutSeconds`` that is no integer."""
    for key in ('limit', 'timeoutSeconds'):
        value = q.get(key)
        if value not in (None, '') and not re.match(r'^[+-]?\d+$', value):
            raise apistatus.bad_request(
                'strconv.ParseInt: parsing %s: invalid syntax'
                % json.dumps(value))


def int_param(query, key):
    """A non-negative integer query parameter (0 when absent)."""
    check_numbers({key: query.get(key)})
    return max(0, int(query.get(key) or 0))


def parse_rv(value, watch=False):
    """A resourceVersion parameter as an integer.

    Malformed: a list answers 400, a watch 500 without a reason (the
    storage's error, as kube-apiserver passes it through).
    """
    if re.match(r'^\d+$', value or ''):
        return int(value)
    detail = 'resourceVersion: Invalid value: %s: strconv.ParseUint: ' \
        'parsing %s: invalid syntax' % (json.dumps(value), json.dumps(value))
    if watch:
        raise apistatus.ApiError(500, '', detail)
    raise apistatus.bad_request('invalid resource version: ' + detail)
