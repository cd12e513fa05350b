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

"""Parsing query parameters and the event stream's $filter."""

import pytest

from sushy_kubevirt import messages
from sushy_kubevirt.redfish import query
from sushy_kubevirt.redfish import sse

SYSTEM = '/redfish/v1/Systems/a'


def record(message, origin=SYSTEM):
    return {'MessageId': 'ResourceEvent.1.4.2.' + message,
            'OriginOfCondition': {'@odata.id': origin}}


@pytest.mark.parametrize('args, expected', [
    ({'$expand': '*'}, {'$expand': ('*', 1)}),
    ({'$expand': '.($levels=3)'}, {'$expand': ('.', 3)}),
    ({'$select': 'A, B/C'}, {'$select': ['A', 'B/C']}),
    ({'$top': '2', '$skip': '0', 'only': ''},
     {'$top': 2, '$skip': 0, 'only': True}),
    ({'excerpt': 'x', 'other': ''}, {}),
])
def test_parse(args, expected):
    assert query._parse(args) == expected


@pytest.mark.parametrize('args, message_id', [
    ({'$filter': 'x'}, 'QueryNotSupported'),
    ({'$expand': 'all'}, 'QueryParameterValueFormatError'),
    ({'$expand': '~($levels=0)'}, 'QueryParameterOutOfRange'),
    ({'$select': 'A,,B'}, 'QueryParameterValueFormatError'),
    ({'$top': '1.5'}, 'QueryParameterValueTypeError'),
    ({'$top': '0'}, 'QueryParameterOutOfRange'),
    ({'only': 'yes'}, 'QueryParameterValueFormatError'),
])
def test_parse_refuses(args, message_id):
    with pytest.raises(messages.RedfishError) as caught:
        query._parse(args)
    assert caught.value.message_id == message_id


def test_select_keeps_the_annotations_and_the_paths():
    body = {'@odata.id': '/x', 'A': 1, 'B': {'C': 2, 'D': 3}, 'E': 4}
    assert query._select(body, ['A', 'B/C', 'Z/Y']) == {
        '@odata.id': '/x', 'A': 1, 'B': {'C': 2}}


@pytest.mark.parametrize('text, message, origin, passes', [
    ("MessageId eq 'ResourceEvent.ResourcePoweredOn'", 'ResourcePoweredOn',
     SYSTEM, True),
    ("MessageId eq 'ResourceEvent.1.4.2.ResourcePoweredOn'",
     'ResourcePoweredOff', SYSTEM, False),
    ("RegistryPrefix eq 'ResourceEvent'", 'ResourceChanged', SYSTEM, True),
    ("OriginResource eq '%s'" % SYSTEM, 'ResourceChanged',
     SYSTEM + '/VirtualMedia/Cd', False),
    ("OriginResource eq '%s' and SubordinateResources eq true" % SYSTEM,
     'ResourceChanged', SYSTEM + '/VirtualMedia/Cd', True),
    ("ResourceType eq 'ComputerSystem' or RegistryPrefix eq 'Base'",
     'ResourceChanged', SYSTEM + '/VirtualMedia/Cd', False),
    ("RegistryPrefix eq 'Base' or MessageId eq "
     "'ResourceEvent.ResourceChanged'", 'ResourceChanged', SYSTEM, True),
])
def test_filter(text, message, origin, passes):
    alternatives = sse.parse_filter(text)
    assert sse.wanted(alternatives, record(message, origin)) is passes


@pytest.mark.parametrize('text', [
    "Severity eq 'OK'", "MessageId ne 'X'", "MessageId eq 'X' or", ''])
def test_bad_filter(text):
    with pytest.raises(messages.RedfishError) as caught:
        sse.parse_filter(text)
    assert caught.value.message_id == 'QueryParameterValueFormatError'
