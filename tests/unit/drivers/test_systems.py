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

"""KubeVirtDriver over a small in-memory fake Cluster."""

import logging

import pytest
from sushy_tools import error

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt import config
from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.drivers import systems
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.simulator import objects

LOG = logging.getLogger(__name__)
#: An account reaching namespace test only.
TEAM = accountsfile.Account('team', 'Operator', frozenset(['test']))


class FakeCluster:
    """Cached reads from dicts; writes recorded (and applied for patches)."""

    datavolumes = False

    def __init__(self, *vms):
        self.vms = {identity.key(vm): vm for vm in vms}
        self.vmis = {}
        self.calls = []
        self.fail = None

    def list_vms(self):
        return list(self.vms.values())

    def list_readable_vms(self):
        return self.list_vms(), []

    def get_vm(self, namespace, name):
        return self.vms.get((namespace, name))

    get_vm_live = get_vm

    def find_vms(self, index, value):
        return [vm for vm in self.vms.values()
                if value in lookup.INDEXERS[index](vm)]

    def get_vmi(self, namespace, name):
        return self.vmis.get((namespace, name))

    def _write(self, *call):
        self.calls.append(call)
        if self.fail:
            raise self.fail

    def patch_vm(self, namespace, name, ops):
        self._write('patch', namespace, name, ops)
        return self.vms[namespace, name]

    def vm_subresource(self, namespace, name, action, body=None):
        self._write(action, namespace, name, body)


def _vm(name, namespace='default', created='2026-01-01T00:00:00Z', **kw):
    vm = objects.make_vm(name, namespace, **kw)
    vm['metadata'].update(resourceVersion='1', creationTimestamp=created)
    return vm


def _driver(cluster, **cfg):
    cls = systems.KubeVirtDriver.initialize(cfg, LOG)
    driver = cls()
    driver._cluster = cluster
    return driver


def test_initialize_names_the_bad_key():
    with pytest.raises(config.ConfigError) as exc:
        systems.KubeVirtDriver.initialize(
            {'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES': 'default'}, LOG)
    assert 'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES' in str(exc.value)


def test_an_auth_file_without_accounts_warns(caplog):
    with caplog.at_level(logging.WARNING):
        systems.KubeVirtDriver.initialize(
            {config.AUTH_FILE_KEY: '/etc/sushy/htpasswd'}, LOG)
    assert 'is an Administrator of every System' in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        systems.KubeVirtDriver.initialize({}, LOG)
    assert caplog.text == ''


def test_a_tenant_neither_lists_nor_finds_other_namespaces():
    old = _vm('node-0', 'lab')
    new = _vm('node-0', 'test', created='2026-02-01T00:00:00Z')
    driver = _driver(FakeCluster(old, new))
    uuid = identity.firmware_uuid(old)
    with context.bound(context.Request(account=TEAM)):
        assert driver.systems == ['test.node-0']
        for ident in (uuid, 'lab.node-0'):
            with pytest.raises(error.NotFound):
                driver.uuid(ident)
        assert driver.name('test.node-0') == 'node-0'


def test_identity_aliases_and_duplicates():
    old = _vm('node-0', 'lab')
    new = _vm('node-0', 'test', created='2026-02-01T00:00:00Z')
    driver = _driver(FakeCluster(old, new))
    uuid = identity.firmware_uuid(old)
    assert uuid == identity.firmware_uuid(new)
    with context.bound(context.Request()):
        assert driver.systems == [uuid, 'test.node-0']
        assert driver.name(uuid) == 'node-0'
        for alias in ('node-0', 'lab.node-0', uuid.upper()):
            with pytest.raises(error.AliasAccessError) as exc:
                driver.uuid(alias)
            assert exc.value.args[0] == uuid
        # The shadowed VM is served under its namespace.name id.
        assert driver.uuid('test.node-0') == uuid
        assert driver.get_power_state('test.node-0') == 'Off'
        with pytest.raises(error.NotFound):
            driver.uuid('nope')
        with pytest.raises(error.NotFound):
            driver.uuid('other.node-0')


def test_a_vm_whose_firmware_uuid_is_no_uuid_is_served_by_alias():
    good = _vm('node-0')
    uuid = identity.firmware_uuid(good)
    bad = _vm('node-1')
    bad['spec']['template']['spec']['domain']['firmware']['uuid'] = \
        '../Systems/' + uuid
    driver = _driver(FakeCluster(good, bad))
    with context.bound(context.Request()):
        assert driver.systems == [uuid, 'default.node-1']
        assert driver.uuid('default.node-1') == 'default.node-1'
        assert driver.name('default.node-1') == 'node-1'
        with pytest.raises(error.AliasAccessError) as exc:
            driver.uuid('node-1')
        assert exc.value.args[0] == 'default.node-1'
        with pytest.raises(error.NotFound):
            driver.uuid('../Systems/' + uuid)


def test_a_shadowed_vm_by_name_redirects_to_its_alias():
    old = _vm('node-0', 'lab')
    new = _vm('node-0', 'test', created='2026-02-01T00:00:00Z')
    driver = _driver(FakeCluster(old, new))
    with context.bound(context.Request(account=TEAM)):
        with pytest.raises(error.AliasAccessError) as exc:
            driver.uuid('node-0')
        assert exc.value.args[0] == 'test.node-0'


def test_power_on_when_on_makes_no_call():
    vm = _vm('node-0', run_strategy='Always')
    cluster = FakeCluster(vm)
    cluster.vmis['default', 'node-0'] = {
        'metadata': {'name': 'node-0', 'namespace': 'default', 'uid': 'u'},
        'status': {'phase': 'Running'}}
    driver = _driver(cluster)
    uuid = identity.firmware_uuid(vm)
    with context.bound(context.Request()):
        driver.set_power_state(uuid, 'On')
        assert cluster.calls == []
        driver.set_power_state(uuid, 'ForceOff')
    assert cluster.calls == [('stop', 'default', 'node-0',
                              {'gracePeriod': 0})]


@pytest.mark.parametrize('reset_type, status, words', [
    ('Nmi', 400, 'ActionParameterNotSupported'),
    ('Explode', 400, 'Unknown ResetType'),
    (None, 400, 'Unknown ResetType'),
])
def test_bad_reset_types(reset_type, status, words):
    vm = _vm('node-0')
    cluster = FakeCluster(vm)
    with pytest.raises(error.FishyError) as exc:
        _driver(cluster).set_power_state(identity.firmware_uuid(vm),
                                         reset_type)
    assert exc.value.code == status
    assert words in '%s %s' % (exc.value, exc.value.message_id)
    assert cluster.calls == []


@pytest.mark.parametrize('fail, status, words', [
    (apierrors.Forbidden('denied', status=403), 500, 'denied'),
    (apierrors.Invalid('bad boot order', status=422), 400, 'bad boot order'),
    (apierrors.Unavailable('https://10.0.0.1:6443: refused'), 503,
     'cannot be reached'),
    (apierrors.NotFound('gone', status=404), 404, 'gone'),
])
def test_kube_errors_are_never_a_success(fail, status, words):
    vm = _vm('node-0')
    cluster = FakeCluster(vm)
    cluster.fail = fail
    driver = _driver(cluster)
    with pytest.raises(error.FishyError) as exc:
        driver.set_boot_device(identity.firmware_uuid(vm), 'Pxe')
    assert exc.value.code == status
    assert words in str(exc.value) and '10.0.0.1' not in str(exc.value)


def test_start_conflict_is_retryable_409():
    vm = _vm('node-0')
    cluster = FakeCluster(vm)
    cluster.fail = apierrors.Conflict('VM is already running', status=409)
    with pytest.raises(error.FishyError) as exc:
        _driver(cluster).set_power_state(identity.firmware_uuid(vm), 'On')
    assert exc.value.code == 409
    assert exc.value.message_id == 'ActionParameterValueConflict'


class LaggingCluster(FakeCluster):
    """A cache one write behind: the live VM moved on to version 2."""

    def __init__(self, vm, live_vm, live_vmi):
        super().__init__(vm)
        self.live = live_vm, live_vmi

    def get_vm_live(self, namespace, name):
        return self.live[0]

    def get_vmi_live(self, namespace, name):
        return self.live[1]


def _stopping():
    """Version 2 of node-0: Halted with its VMI still there (PoweringOff)."""
    live = _vm('node-0')
    live['metadata']['resourceVersion'] = '2'
    vmi = {'metadata': {'name': 'node-0', 'namespace': 'default',
                        'uid': 'u'}, 'status': {'phase': 'Running'}}
    return live, vmi


@pytest.mark.parametrize('held, status, message_id', [
    (False, 409, 'ActionParameterValueConflict'),
    (True, 412, 'PreconditionFailed'),
])
def test_reset_with_a_consumed_etag_is_412_before_409(held, status,
                                                      message_id):
    """Another worker's write moved the VM on: its If-Match fails first."""
    vm = _vm('node-0')
    cluster = LaggingCluster(vm, *_stopping())
    driver = _driver(cluster)
    uuid = identity.firmware_uuid(vm)
    with context.bound(context.Request()) as request, \
            pytest.raises(error.FishyError) as exc:
        if held:
            assert driver.hold_etag(uuid, lambda etag: True, request) is None
        driver.set_power_state(uuid, 'On')
    assert (exc.value.code, exc.value.message_id) == (status, message_id)
    assert cluster.calls == []


def test_boot_device_errors_change_nothing():
    vm = _vm('node-0')
    cluster = FakeCluster(vm)
    driver = _driver(cluster)
    uuid = identity.firmware_uuid(vm)
    with context.bound(context.Request()):
        for target in ('Cd', 'Floppy'):
            with pytest.raises(error.FishyError) as exc:
                driver.set_boot_device(uuid, target)
            assert exc.value.code == 400
            assert exc.value.message_id == 'PropertyValueNotInList'
        driver.set_boot_device(uuid, 'Hdd')
    assert cluster.calls == []


class IndexOnlyCluster(FakeCluster):
    """Lookups must use the indexes: listing every VM is a failure."""

    listing = False

    def list_vms(self):
        if not self.listing:
            raise AssertionError('a System lookup scanned every VM')
        return super().list_vms()


def test_lookups_never_scan_every_vm():
    vm = _vm('node-0')
    driver = _driver(IndexOnlyCluster(vm))
    uuid = identity.firmware_uuid(vm)
    with context.bound(context.Request()):
        assert driver.name(uuid) == 'node-0'
        for missing in ('0b6f4c4e-8a1d-4a5e-9a38-5b1c9d2e7f10', 'nope',
                        'lab.nope'):
            with pytest.raises(error.NotFound):
                driver.uuid(missing)
        with pytest.raises(error.AliasAccessError):
            driver.uuid(uuid.upper())


def test_boot_override_disabled_cancels_a_pending_once(monkeypatch):
    vm = _vm('node-0')
    cluster = FakeCluster(vm)
    driver = _driver(cluster)
    uuid = identity.firmware_uuid(vm)
    calls = []
    monkeypatch.setattr(systems.boot, 'cancel_once_ops',
                        lambda vm: calls.append(vm) or [])
    with context.bound(context.Request()):
        driver.set_boot_device(uuid, 'Hdd', 'Disabled')
    assert calls == [vm]


def test_find_vm_is_public_for_other_drivers():
    vm = _vm('node-0', 'lab')
    driver = _driver(FakeCluster(vm))
    uuid = identity.firmware_uuid(vm)
    with context.bound(context.Request()):
        assert driver.find_vm(uuid) is vm
        with pytest.raises(error.AliasAccessError) as exc:
            driver.find_vm('lab.node-0')
        assert exc.value.args[0] == uuid
        with pytest.raises(error.NotFound):
            driver.find_vm('lab.other')
