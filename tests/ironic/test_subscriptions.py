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

"""Ironic's redfish vendor passthru manages event subscriptions.

``create_subscription``, ``get_all_subscriptions``, ``get_subscription``
and ``delete_subscription`` through a real Ironic, against the emulator
under gunicorn with the EventService on; a power change made through
Ironic reaches the subscribed receiver. Run by ``tox -e ironic``.
"""

import pytest
from tests.functional.emulator import harness
from tests.functional.events import conftest as events
from tests.functional.events import receiver as receivermod
from tests.ironic import client
from tests.ironic import stack

from sushy_kubevirt.kubevirt import identity


@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    with stack.Stack(tmp_path_factory.mktemp('ironic-events'), vms=1,
                     settings=events.EVENTS, vendor='redfish') as lab:
        yield lab


def _passthru(api, node, method, verb='GET', body=None):
    path = '/nodes/%s/vendor_passthru?method=%s' % (node, method)
    return api._call(verb, path, json=body)


def test_vendor_passthru_subscriptions(lab):
    api = client.Ironic(lab.ironic.url)
    uuid = identity.firmware_uuid(harness.vm(lab.sim, 'vm-00000'))
    node = api.post('/nodes', {
        'name': 'events-0', 'driver': 'redfish',
        'vendor_interface': 'redfish',
        'driver_info': {'redfish_address': lab.emulator.url,
                        'redfish_system_id': '/redfish/v1/Systems/' + uuid}})
    ident = node['uuid']
    api.wait(ident, 'enroll')
    with receivermod.Receiver() as receiver:
        made = _passthru(api, ident, 'create_subscription', 'POST',
                         {'Destination': receiver.url, 'Context': 'ironic'})
        assert made['Destination'] == receiver.url
        assert made['Context'] == 'ironic'
        assert made['EventTypes'] == ['Alert']
        listed = _passthru(api, ident, 'get_all_subscriptions')
        assert listed['Members@odata.count'] == 1
        got = _passthru(api, ident, 'get_subscription', 'GET',
                        {'id': made['Id']})
        assert got['Id'] == made['Id']
        api.put('/nodes/%s/states/power' % ident, {'target': 'power on'})
        path = '/redfish/v1/Systems/' + uuid
        receiver.wait(lambda r: r.matching(path, 'ResourcePoweredOn'),
                      timeout=60)
        # The event can come before Ironic's power task ends; until it
        # releases the node, a passthru is a 409 NodeLocked.
        api.wait_power(ident, 'power on')
        harness.wait_until(lambda: api.node(ident)['reservation'] is None,
                           60, 0.2, 'node %s released' % ident)
        _passthru(api, ident, 'delete_subscription', 'DELETE',
                  {'id': made['Id']})
        listed = _passthru(api, ident, 'get_all_subscriptions')
        assert listed['Members@odata.count'] == 0
