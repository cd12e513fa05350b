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

"""Query parameters ($select, $expand, only, $top, $skip) over HTTP."""

import requests
from tests import backend
from tests.functional.emulator import harness

SYSTEMS = '/redfish/v1/Systems'


def get(emulator, path, **params):
    return requests.get(emulator.url + path, params=params, timeout=30)


def code(answer):
    return answer.json()['error']['@Message.ExtendedInfo'][0]['MessageId']


def test_root_advertises_what_works(emulator):
    root = get(emulator, '/redfish/v1/').json()
    features = root['ProtocolFeaturesSupported']
    assert features['SelectQuery'] and features['OnlyMemberQuery']
    assert features['TopSkipQuery']
    assert features['ExpandQuery']['MaxLevels'] >= 1
    assert not features['FilterQuery']


def test_unknown_and_bad_parameters(emulator):
    assert get(emulator, '/redfish/v1/', rpvunknown='').status_code == 200
    answer = get(emulator, '/redfish/v1/', **{'$rpvunknown': ''})
    assert answer.status_code == 501
    assert code(answer).endswith('.QueryNotSupported')
    answer = get(emulator, SYSTEMS, only='foo')
    assert answer.status_code == 400
    assert code(answer).endswith('.QueryParameterValueFormatError')
    answer = get(emulator, SYSTEMS, **{'$top': '-1'})
    assert answer.status_code == 400
    assert code(answer).endswith('.QueryParameterValueTypeError')
    answer = get(emulator, SYSTEMS, **{'$expand': '.($levels=9)'})
    assert answer.status_code == 400
    assert code(answer).endswith('.QueryParameterOutOfRange')
    answer = get(emulator, '/redfish/v1/', **{'$top': '1'})
    assert answer.status_code == 400
    assert code(answer).endswith('.QueryNotSupportedOnResource')


def test_top_skip_page_with_next_link(emulator):
    every = get(emulator, SYSTEMS).json()['Members']
    assert len(every) >= 3
    page = get(emulator, SYSTEMS, **{'$top': '2'}).json()
    assert page['Members'] == every[:2]
    assert page['Members@odata.count'] == len(every)
    following = requests.get(emulator.url + page['Members@odata.nextLink'],
                             timeout=30).json()
    assert following['Members'] == every[2:4]
    last = get(emulator, SYSTEMS, **{'$skip': str(len(every) - 1),
                                     '$top': '5'}).json()
    assert last['Members'] == every[-1:]
    assert 'Members@odata.nextLink' not in last


def test_select_and_its_etag(emulator, machine):
    full = get(emulator, machine.path)
    answer = get(emulator, machine.path, **{'$select': 'PowerState,Boot/'
                                            'BootSourceOverrideTarget'})
    body = answer.json()
    assert set(body) - {'@odata.context'} == {
        '@odata.id', '@odata.type', 'PowerState', 'Boot'}
    assert list(body['Boot']) == ['BootSourceOverrideTarget']
    assert body['PowerState'] == full.json()['PowerState']
    tag = answer.headers['ETag']
    assert tag != full.headers['ETag']
    again = requests.get(emulator.url + machine.path, timeout=30,
                         params={'$select': 'PowerState,Boot/'
                                 'BootSourceOverrideTarget'},
                         headers={'If-None-Match': tag})
    assert again.status_code == 304
    # The full representation's tag does not validate the selection.
    other = requests.get(emulator.url + machine.path, timeout=30,
                         params={'$select': 'PowerState'},
                         headers={'If-None-Match': full.headers['ETag']})
    assert other.status_code == 200


def test_expand_and_only_from_the_cache(sim, emulator, machine):
    get(emulator, SYSTEMS)   # warm
    backend.log_complete(sim)
    sim.request_log.clear()
    expanded = get(emulator, SYSTEMS, **{'$expand': '.'})
    assert expanded.status_code == 200, expanded.text
    members = expanded.json()['Members']
    assert members and all(m['@odata.type'].startswith(
        '#ComputerSystem.') for m in members)
    assert 'ETag' not in expanded.headers
    deeper = get(emulator, machine.path, **{'$expand': '.($levels=2)'})
    processors = deeper.json()['Processors']
    assert processors['@odata.type'].startswith('#ProcessorCollection.')
    assert processors['Members'][0]['@odata.type'].startswith(
        '#Processor.')
    linked = get(emulator, machine.path, **{'$expand': '~'}).json()
    assert 'Name' in linked['Links']['Chassis'][0]
    assert list(linked['Processors']) == ['@odata.id']
    one = get(emulator, machine.path + '/Processors', only='').json()
    assert one['@odata.type'].startswith('#Processor.')
    backend.log_complete(sim)
    assert [e for e in harness.api_calls(sim)
            if e['path'] != '/version'] == []
