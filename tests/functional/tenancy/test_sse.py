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

"""The event stream carries only the events of the account's Systems."""

from tests.functional.emulator import harness
from tests.functional.events import sse
from tests.functional.tenancy import conftest
from tests.functional.tenancy import test_owners as owners


def _sending(admin):
    """Whether the emulator's EventService watches (and leads)."""
    return any(line.startswith('sushy_kubevirt_events_leader{')
               and line.endswith(' 1')
               for line in admin.get('/metrics').text.splitlines())


def test_a_stream_never_crosses_tenants(sim, clients):
    harness.wait_until(lambda: _sending(clients['admin']), 20, 0.2,
                       'the EventService')
    own = owners.vm_names(sim, conftest.OWN)
    foreign = owners.vm_names(sim, conftest.FOREIGN)
    mine = owners.path_of(sim, conftest.OWN, own[0])
    theirs = owners.path_of(sim, conftest.FOREIGN, foreign[0])
    with sse.Stream(clients['op-a'].url, clients['op-a'].session) as a, \
            sse.Stream(clients['admin'].url,
                       clients['admin'].session) as admin:
        assert a.response.status_code == 200
        owners.edit_cores(sim, conftest.FOREIGN, foreign[0], 5)
        owners.edit_cores(sim, conftest.OWN, own[0], 5)
        # In order: the foreign change came first, and was left out.
        _, body = a.next()
        assert body['Events'][0]['OriginOfCondition']['@odata.id'] == mine
        _, body = admin.next()
        assert body['Events'][0]['OriginOfCondition']['@odata.id'] == theirs
    stranger = sse.Stream(clients['stranger'].url,
                          clients['stranger'].session)
    stranger.close()
    assert stranger.response.status_code == 401   # no account
