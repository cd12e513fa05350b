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

"""KubeVirtIndicators over an in-memory fake Cluster."""

import logging
from unittest import mock

import pytest
from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import indicators
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.drivers import systems
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import indicator
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.simulator import objects

LOG = logging.getLogger(__name__)
CHASSIS = '48295861-2522-3561-6729-621118518810'
KEY = indicator.ANNOTATION


class FakeCluster:
    """Cached VMs in a dict; patches recorded and applied."""

    datavolumes = False

    def __init__(self, *vms):
        self.vms = {identity.key(vm): vm for vm in vms}
        self.patches = []
        self.fail = None

    def get_vm(self, namespace, name):
        return self.vms.get((namespace, name))

    get_vm_live = get_vm

    def find_vms(self, index, value):
        return [vm for vm in self.vms.values()
                if value in lookup.INDEXERS[index](vm)]

    def patch_vm(self, namespace, name, ops):
        self.patches.append((namespace, name, ops))
        if self.fail:
            raise self.fail
        vm = jsonpatch.apply(self.vms[namespace, name], ops)
        vm['metadata']['resourceVersion'] = str(
            int(vm['metadata']['resourceVersion']) + 1)
        self.vms[namespace, name] = vm
        return vm


def _vm(name, namespace='default', created='2026-01-01T00:00:00Z'):
    vm = objects.make_vm(name, namespace)
    vm['metadata'].update(resourceVersion='1', creationTimestamp=created)
    return vm


def _leds(cluster, **cfg):
    driver = systems.KubeVirtDriver.initialize(cfg, LOG)()
    driver._cluster = cluster
    stock = mock.Mock()
    stock.get_indicator_state.return_value = 'Off'
    fallback = mock.Mock(return_value=stock)
    return driver.indicators_driver(fallback), fallback, stock


def test_unset_is_lit_or_the_configured_initial_state():
    vm = _vm('node-0')
    uuid = identity.firmware_uuid(vm)
    leds, fallback, _ = _leds(FakeCluster(vm))
    assert isinstance(leds, indicators.KubeVirtIndicators)
    assert leds.get_indicator_state(uuid) == 'Lit'
    leds, fallback, _ = _leds(FakeCluster(vm), SUSHY_EMULATOR_INDICATOR_LEDS={
        uuid: 'Blinking'})
    assert leds.get_indicator_state(uuid) == 'Blinking'
    fallback.assert_not_called()


def test_set_patches_the_annotation_once():
    cluster = FakeCluster(_vm('node-0'))
    uuid = identity.firmware_uuid(cluster.get_vm('default', 'node-0'))
    leds, fallback, _ = _leds(cluster)
    leds.set_indicator_state(uuid, 'Blinking')
    assert cluster.patches == [('default', 'node-0', [
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '1'},
        {'op': 'add', 'path': '/metadata/annotations',
         'value': {KEY: 'Blinking'}}])]
    assert leds.get_indicator_state(uuid) == 'Blinking'
    leds.set_indicator_state(uuid, 'Blinking')
    assert len(cluster.patches) == 1
    leds.set_indicator_state(uuid, 'Off')
    assert cluster.patches[-1][2][1] == {
        'op': 'replace', 'path': '/metadata/annotations/' + KEY.replace(
            '/', '~1'), 'value': 'Off'}
    assert leds.get_indicator_state(uuid) == 'Off'
    fallback.assert_not_called()


@pytest.mark.parametrize('ident', ['vm', CHASSIS])
@pytest.mark.parametrize('state', ['Unknown', 'lit', '', None])
def test_invalid_state_is_a_400_and_changes_nothing(ident, state):
    cluster = FakeCluster(_vm('node-0'))
    if ident == 'vm':
        ident = identity.firmware_uuid(cluster.get_vm('default', 'node-0'))
    leds, fallback, stock = _leds(cluster)
    with pytest.raises(error.FishyError) as exc:
        leds.set_indicator_state(ident, state)
    assert exc.value.code == 400
    assert 'Lit, Blinking, Off' in str(exc.value)
    assert cluster.patches == []
    stock.set_indicator_state.assert_not_called()


def test_hand_edited_annotation_reads_as_none():
    vm = _vm('node-0')
    vm['metadata']['annotations'] = {KEY: 'on'}
    leds, _, _ = _leds(FakeCluster(vm))
    assert leds.get_indicator_state(identity.firmware_uuid(vm)) is None


def test_other_identities_go_to_the_stock_driver():
    cluster = FakeCluster(_vm('node-0'))
    leds, fallback, stock = _leds(cluster)
    assert leds.get_indicator_state(CHASSIS) == 'Off'
    leds.set_indicator_state(CHASSIS, 'Blinking')
    stock.get_indicator_state.assert_called_once_with(CHASSIS)
    stock.set_indicator_state.assert_called_once_with(CHASSIS, 'Blinking')
    assert cluster.patches == []


def test_a_system_request_uses_its_own_id():
    # Two VMs share a firmware UUID; the shadowed one has its own LED.
    old = _vm('node-0', 'lab')
    new = _vm('node-0', 'test', created='2026-02-01T00:00:00Z')
    cluster = FakeCluster(old, new)
    uuid = identity.firmware_uuid(old)
    leds, _, _ = _leds(cluster)
    with context.bound(context.Request(system='test.node-0')):
        leds.set_indicator_state(uuid, 'Off')
    assert cluster.patches[0][:2] == ('test', 'node-0')
    with context.bound(context.Request(system='test.node-0')):
        assert leds.get_indicator_state(uuid) == 'Off'
    with context.bound(context.Request(system=uuid)):
        assert leds.get_indicator_state(uuid) == 'Lit'


@pytest.mark.parametrize('exc, code', [
    (apierrors.Unavailable('down'), 503),
    (apierrors.Forbidden('no', status=403, reason='Forbidden'), 500)])
def test_kubernetes_errors_are_translated(exc, code):
    cluster = FakeCluster(_vm('node-0'))
    cluster.fail = exc
    leds, _, _ = _leds(cluster)
    with pytest.raises(error.FishyError) as raised:
        leds.set_indicator_state(
            identity.firmware_uuid(cluster.get_vm('default', 'node-0')),
            'Off')
    assert raised.value.code == code
