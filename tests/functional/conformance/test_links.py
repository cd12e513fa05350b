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

"""Every link resolves: a crawl from the service root answers 2xx.

Follows every ``@odata.id`` (and ``@Redfish.ActionInfo``) of every
resource reachable from ``/redfish/v1/``, for each feature set, with a
System On and one Off. Fragments (``.../Thermal#/Fans/0``) name a part
of a resource already fetched.
"""

import pytest
import requests
from tests.functional.conformance import conftest
from tests.functional.emulator import harness

FEATURE_SETS = ('full', 'vmedia', 'minimum')
LIMIT = 2000
LINK_KEYS = ('@odata.id', '@Redfish.ActionInfo')


sim = conftest.sim_fixture(2)


def links(value):
    """Every link URI in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in LINK_KEYS and isinstance(item, str):
                yield item.partition('#')[0]
            else:
                yield from links(item)
    elif isinstance(value, list):
        for item in value:
            yield from links(item)


def crawl(base):
    """``{uri: status}`` of everything reachable from the service root."""
    seen, todo = {}, ['/redfish/v1/']
    while todo:
        assert len(seen) < LIMIT, 'more than %d resources' % LIMIT
        uri = todo.pop()
        if uri in seen:
            continue
        response = requests.get(base + uri, timeout=30)
        seen[uri] = response.status_code
        if response.status_code == 200:
            todo.extend(u for u in links(response.json()) if u not in seen)
    return seen


@pytest.mark.parametrize('feature_set', FEATURE_SETS)
def test_every_link_answers_2xx(sim, feature_set, tmp_path):
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kc')),
        SUSHY_EMULATOR_FEATURE_SET=feature_set)
    with harness.InProcess(config) as emulator:
        systems = requests.get(emulator.url + '/redfish/v1/Systems',
                               timeout=30).json()['Members']
        on = systems[0]['@odata.id']
        requests.post(emulator.url + on + '/Actions/ComputerSystem.Reset',
                      json={'ResetType': 'On'}, timeout=30)
        harness.wait_until(lambda: requests.get(
            emulator.url + on, timeout=30).json()['PowerState'] == 'On',
            what='System On')
        seen = crawl(emulator.url)
    assert len(seen) > 5
    broken = {uri: code for uri, code in seen.items()
              if not 200 <= code < 300}
    assert not broken
