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

import uuid

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import identity


def test_legacy_firmware_uuid():
    value = identity.legacy_firmware_uuid('node-0')
    assert value == '64b7b60f-6d3b-5157-bcbf-7c281949040d'
    parsed = uuid.UUID(value)
    assert parsed.version == 5
    assert value == str(uuid.uuid5(
        uuid.UUID(identity.LEGACY_NAMESPACE_UUID), 'node-0'))
    assert identity.legacy_firmware_uuid('node-1') != value


@pytest.mark.parametrize('firmware, expected', [
    ({'uuid': '5B0D2F3A-0000-4000-8000-000000000001'},
     '5b0d2f3a-0000-4000-8000-000000000001'),
    ({'uuid': 'not-a-uuid'}, None),
    ({'uuid': '../Systems/5b0d2f3a-0000-4000-8000-000000000001'}, None),
    ({'uuid': ''}, '64b7b60f-6d3b-5157-bcbf-7c281949040d'),
    ({}, '64b7b60f-6d3b-5157-bcbf-7c281949040d'),
    (None, '64b7b60f-6d3b-5157-bcbf-7c281949040d'),
])
def test_firmware_uuid(firmware, expected):
    vm = fx.vm(domain={'firmware': firmware} if firmware is not None
               else None)
    assert identity.firmware_uuid(vm) == expected


@pytest.mark.parametrize('value', [
    'not-a-uuid', 'a/b', 'a\r\nb', 'x\u202eevil', 'z' * 3000, '..'])
def test_a_firmware_uuid_that_is_no_uuid_gives_the_alias_id(value):
    vm = fx.vm(domain={'firmware': {'uuid': value}})
    assert identity.system_id(vm) == 'lab.node-0' == identity.alias(vm)


def test_system_id_is_the_canonical_firmware_uuid():
    vm = fx.vm(domain={'firmware': {
        'uuid': '{5B0D2F3A-0000-4000-8000-000000000001}'}})
    assert identity.system_id(vm) == '5b0d2f3a-0000-4000-8000-000000000001'


def test_serial_key_aliases():
    vm = fx.vm(domain={'firmware': {'serial': 'SN1'}})
    assert identity.serial(vm) == 'SN1'
    assert identity.serial(fx.vm()) is None
    assert identity.key(vm) == ('lab', 'node-0')
    assert identity.aliases(vm) == ['node-0', 'lab.node-0']


def test_pick():
    a = fx.vm(namespace='b', created='2024-01-02T00:00:00Z')
    b = fx.vm(namespace='a', created='2024-01-03T00:00:00Z')
    c = fx.vm(namespace='c', created='2024-01-02T00:00:00Z')
    d = fx.vm(namespace='0', created=None)
    del d['metadata']['creationTimestamp']
    assert identity.pick([b, c, a, d]) is a, 'oldest, then namespace'
    assert identity.pick([d, b]) is b, 'missing timestamp sorts last'
    assert identity.pick([c, a]) is identity.pick([a, c])
    assert identity.pick([]) is None
