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

import itertools

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import power

Call = power.Call


def _vm(strategy='Halted', pending=(), printable=None, conditions=(),
        domain=None, status_strategy=None, **kw):
    status = {'stateChangeRequests': [{'action': a} for a in pending]}
    if printable:
        status['printableStatus'] = printable
    if status_strategy:
        status['runStrategy'] = status_strategy
    status['conditions'] = [{'type': c, 'status': 'True'}
                            for c in conditions]
    return fx.vm(strategy=strategy, status=status, domain=domain, **kw)


@pytest.mark.parametrize('vm, vmi, expected', [
    (_vm('Halted'), None, 'Off'),
    (_vm('Halted', printable='Starting'), None, 'Off'),
    (_vm('Always'), None, 'PoweringOn'),
    (_vm('Always'), fx.vmi('Failed'), 'PoweringOn'),
    (_vm('Always'), fx.vmi('Running'), 'On'),
    (_vm('Always'), fx.vmi('Unknown'), 'On'),
    (_vm('Always'), fx.vmi('Running', conditions=['Paused']), 'Paused'),
    (_vm('Always'), fx.vmi('Pending'), 'PoweringOn'),
    (_vm('Always'), fx.vmi('Scheduling'), 'PoweringOn'),
    (_vm('Always'), fx.vmi('Scheduled'), 'PoweringOn'),
    (_vm('Always'), fx.vmi(''), 'PoweringOn'),
    (_vm('Always', printable='Stopping'), fx.vmi(), 'PoweringOff'),
    (_vm('Always', printable='Terminating'), fx.vmi(), 'PoweringOff'),
    (_vm('Always'), fx.vmi(deleting=True), 'PoweringOff'),
    (_vm('Halted'), fx.vmi(), 'PoweringOff'),
    (_vm('Manual', ['Stop']), fx.vmi(), 'PoweringOff'),
    (_vm('Manual', ['Start']), None, 'PoweringOn'),
    (_vm('Manual', ['Stop', 'Start']), fx.vmi('Succeeded'), 'PoweringOn'),
    (_vm('Manual', ['Stop']), fx.vmi('Succeeded'), 'Off'),
    (_vm('Manual'), fx.vmi('Succeeded'), 'Off'),
    (_vm('Manual'), None, 'Off'),
    # virt-controller ranks Provisioning and DataVolumeError (a tray
    # importing or failed) ahead of Stopped whether or not the VM runs.
    (_vm('Manual', printable='Provisioning'), None, 'Off'),
    (_vm('Manual', printable='DataVolumeError'), None, 'Off'),
    (_vm('RerunOnFailure', printable='Provisioning',
         status_strategy='RerunOnFailure'), None, 'Off'),
    (_vm('Once', printable='DataVolumeError'), fx.vmi('Succeeded'), 'Off'),
    (_vm('Manual', ['Start'], printable='Provisioning'), None,
     'PoweringOn'),
    (_vm('Always', printable='DataVolumeError'), None, 'PoweringOn'),
    (_vm('Manual', printable='Provisioning'), fx.vmi('Pending'),
     'PoweringOn'),
    # A RerunOnFailure VM coming from another strategy is started.
    (_vm('RerunOnFailure', printable='Provisioning'), None, 'PoweringOn'),
    (_vm('Manual', printable='WaitingForVolumeBinding'), None,
     'PoweringOn'),
    (_vm('Manual', printable='Stopped'), None, 'Off'),
    (_vm('RerunOnFailure'), fx.vmi('Failed'), 'PoweringOn'),
    (_vm('RerunOnFailure'), fx.vmi('Succeeded'), 'Off'),
    (_vm('Once'), None, 'PoweringOn'),
    (_vm('Once'), fx.vmi('Succeeded'), 'Off'),
    (_vm(None, running=True), None, 'PoweringOn'),
    (_vm(None, running=True), fx.vmi(), 'On'),
    (_vm(None, running=False), None, 'Off'),
    (_vm(None), None, 'Off'),
])
def test_power_state(vm, vmi, expected):
    assert power.power_state(vm, vmi) == expected
    assert expected in power.POWER_STATES


STOP0 = Call('vm', 'stop', {'gracePeriod': 0})
STOP = Call('vm', 'stop', {})
START = Call('vm', 'start', {})
RESTART = Call('vm', 'restart', {})
RESTART0 = Call('vm', 'restart', {'gracePeriodSeconds': 0})
ONCE_TO_ALWAYS = ALWAYS = Call('vm', power.RUN_STRATEGY, 'Always')
MANUAL = Call('vm', power.RUN_STRATEGY, 'Manual')
HALTED = Call('vm', power.RUN_STRATEGY, 'Halted')
RESTARTING = ('Stop', 'Start')
AGENT = ['AgentConnected']
TERMINATE = {'rebootPolicy': 'Terminate'}


@pytest.mark.parametrize('reset, vm, vmi, expected', [
    ('On', _vm('Halted'), None, [START]),
    ('ForceOn', _vm('Halted'), fx.vmi('Succeeded'), [START]),
    ('On', _vm(None, running=False), None, [START]),
    ('On', _vm('Manual'), fx.vmi('Succeeded'), [START]),
    ('On', _vm('RerunOnFailure'), fx.vmi('Succeeded'), [START]),
    ('On', _vm('Once'), fx.vmi('Succeeded'), [ONCE_TO_ALWAYS]),
    ('On', _vm('Always'), fx.vmi(), []),
    ('On', _vm('Always'), fx.vmi('Scheduling'), []),
    ('On', _vm('Always'), None, []),
    ('ForceOn', _vm('Always'), fx.vmi(conditions=['Paused']),
     [Call('vmi', 'unpause', {})]),
    ('ForceOff', _vm('Always'), fx.vmi(), [STOP0]),
    ('ForceOff', _vm('Always'), fx.vmi(conditions=['Paused']), [STOP0]),
    ('ForceOff', _vm('Halted'), None, []),
    ('ForceOff', _vm('Halted'), fx.vmi(grace=180), [STOP0]),
    ('ForceOff', _vm('Halted'), fx.vmi(), [STOP0]),
    ('ForceOff', _vm('Halted'), fx.vmi(grace=0), []),
    ('ForceOff', _vm('Manual', ['Stop']), fx.vmi(grace=30), [STOP0]),
    ('ForceOff', _vm('Always'), None, [STOP0]),
    ('ForceOff', _vm('Always'), fx.vmi('Pending'), [STOP0]),
    ('GracefulShutdown', _vm('Always'), fx.vmi(), [STOP]),
    ('GracefulShutdown', _vm('Halted'), fx.vmi(grace=180), []),
    ('GracefulShutdown', _vm('Halted'), None, []),
    ('GracefulShutdown', _vm('Once'), None, [STOP]),
    ('GracefulRestart', _vm('Always'), fx.vmi(conditions=AGENT),
     [Call('vmi', 'softreboot', {})]),
    ('GracefulRestart', _vm('Always', conditions=['RestartRequired']),
     fx.vmi(conditions=AGENT), [RESTART]),
    ('GracefulRestart',
     _vm('Always', conditions=['RestartRequired'],
         domain={'rebootPolicy': 'Terminate'}),
     fx.vmi(conditions=AGENT), [Call('vmi', 'softreboot', {})]),
    ('GracefulRestart', _vm('Always'), fx.vmi(), [RESTART]),
    ('GracefulRestart', _vm('Always'),
     fx.vmi(conditions=AGENT + ['Paused']), [RESTART]),
    ('GracefulRestart', _vm('Halted'), None, [START]),
    ('GracefulRestart', _vm('Always'), None, []),
    ('GracefulRestart', _vm('Once'), fx.vmi(), [ONCE_TO_ALWAYS, RESTART]),
    ('GracefulRestart', _vm('Once'), fx.vmi(conditions=AGENT),
     [Call('vmi', 'softreboot', {})]),
    # rebootPolicy Terminate ends the VMI on a guest reboot: only Always
    # makes a new one, the others would end Off.
    ('GracefulRestart', _vm('Manual', domain=TERMINATE),
     fx.vmi(conditions=AGENT), [RESTART]),
    ('GracefulRestart', _vm('RerunOnFailure', domain=TERMINATE),
     fx.vmi(conditions=AGENT), [RESTART]),
    ('GracefulRestart', _vm('Once', domain=TERMINATE),
     fx.vmi(conditions=AGENT), [ONCE_TO_ALWAYS, RESTART]),
    ('GracefulRestart', _vm('Always', domain=TERMINATE),
     fx.vmi(conditions=AGENT), [Call('vmi', 'softreboot', {})]),
    ('GracefulRestart', _vm('Manual'),
     fx.vmi(conditions=AGENT, domain=TERMINATE), [RESTART]),
    # A stopped VM whose tray imports or failed is Off: On starts it (the
    # driver then refuses the start while the tray is not ready).
    ('On', _vm('Manual', printable='Provisioning'), None, [START]),
    ('PushPowerButton', _vm('Manual', printable='DataVolumeError'), None,
     [START]),
    ('On', _vm('RerunOnFailure', printable='Provisioning',
               status_strategy='RerunOnFailure'), None, [START]),
    ('GracefulRestart', _vm('Once', printable='Provisioning'),
     fx.vmi('Succeeded'), [ONCE_TO_ALWAYS]),
    ('ForceOff', _vm('Manual', printable='Provisioning'), None, []),
    ('GracefulShutdown', _vm('Once', printable='DataVolumeError'),
     fx.vmi('Succeeded'), []),
    ('ForceRestart', _vm('Always'), fx.vmi(conditions=AGENT), [RESTART0]),
    ('ForceRestart', _vm('Manual'), fx.vmi(), [RESTART0]),
    ('ForceRestart', _vm('Always'), fx.vmi('Scheduling'), [RESTART0]),
    ('ForceRestart', _vm('Halted'), None, [START]),
    ('ForceRestart', _vm('Once'), fx.vmi(), [ONCE_TO_ALWAYS, RESTART0]),
    ('ForceRestart', _vm('Once'), fx.vmi('Succeeded'), [ONCE_TO_ALWAYS]),
    ('PushPowerButton', _vm('Always'), fx.vmi(), [STOP]),
    ('PushPowerButton', _vm('Always'), None, [STOP]),
    ('PushPowerButton', _vm('Halted'), None, [START]),
    # A stop during a restart must also drop the pending Start request.
    ('ForceOff', _vm('Always', RESTARTING), fx.vmi(grace=180),
     [MANUAL, STOP0, HALTED]),
    ('ForceOff', _vm('Halted', RESTARTING), fx.vmi(deleting=True),
     [MANUAL, STOP0, HALTED]),
    ('ForceOff', _vm(None, RESTARTING, running=True), fx.vmi(grace=0),
     [MANUAL, STOP0, HALTED]),
    ('ForceOff', _vm('Manual', RESTARTING), fx.vmi(grace=0), [STOP0]),
    ('GracefulShutdown', _vm('Always', RESTARTING), fx.vmi(),
     [MANUAL, STOP, HALTED]),
    ('GracefulShutdown', _vm('RerunOnFailure', RESTARTING), fx.vmi(),
     [STOP]),
    # ForceRestart while PoweringOff is a power cycle.
    ('ForceRestart', _vm('Halted'), fx.vmi(grace=180), [STOP0, ALWAYS]),
    ('ForceRestart', _vm('Halted'), fx.vmi(grace=0), [ALWAYS]),
    ('ForceRestart', _vm(None, running=False), fx.vmi(), [STOP0, ALWAYS]),
    ('ForceRestart', _vm('Always', printable='Stopping'), fx.vmi(),
     [STOP0, ALWAYS]),
    ('ForceRestart', _vm('Always', RESTARTING), fx.vmi(grace=180),
     [STOP0, ALWAYS]),
    ('ForceRestart', _vm('Always', RESTARTING), fx.vmi(grace=0), []),
    ('ForceRestart', _vm('Manual', RESTARTING), fx.vmi(grace=0), []),
])
def test_reset_plan(reset, vm, vmi, expected):
    assert power.reset_plan(reset, vm, vmi) == expected


@pytest.mark.parametrize('reset, vm, vmi', [
    ('On', _vm('Halted'), fx.vmi()),
    ('ForceOn', _vm('Always', printable='Stopping'), fx.vmi()),
    ('GracefulRestart', _vm('Halted'), fx.vmi()),
    ('ForceRestart', _vm('Manual', ['Stop']), fx.vmi()),
    ('PushPowerButton', _vm('Halted'), fx.vmi()),
    ('ForceOff', _vm('Manual', ['Start']), None),
    ('ForceOff', _vm('Always', ['Start']), None),
    ('ForceOff', _vm('Manual', RESTARTING), fx.vmi('Succeeded')),
    ('ForceRestart', _vm('Manual', RESTARTING), fx.vmi(grace=30)),
    ('ForceRestart', _vm('RerunOnFailure', ['Stop']), fx.vmi()),
    ('GracefulShutdown', _vm('Manual', printable='Starting'), None),
])
def test_transition_in_progress(reset, vm, vmi):
    with pytest.raises(power.TransitionInProgress) as exc:
        power.reset_plan(reset, vm, vmi)
    assert reset in str(exc.value)
    assert exc.value.status == 409


@pytest.mark.parametrize('reset', ['Nmi', 'PowerCycle', 'Suspend'])
def test_not_supported(reset):
    with pytest.raises(power.NotSupported) as exc:
        power.reset_plan(reset, _vm('Always'), fx.vmi())
    assert reset in str(exc.value)
    assert exc.value.status == 400


@pytest.mark.parametrize('reset', [None, '', 'on', 'Reboot', 7])
def test_unknown_reset_type(reset):
    with pytest.raises(power.UnknownResetType):
        power.reset_plan(reset, _vm('Always'), fx.vmi())


# --- Every planned call must be one KubeVirt's virt-api accepts. ---

def _final(vmi):
    return vmi is None or vmi['status']['phase'] in ('Succeeded', 'Failed')


def _kubevirt_accepts(call, vm, vmi):
    """The 409 rules of KubeVirt's subresource.go (see reference §2.2)."""
    strategy = power.run_strategy(vm)
    conditions = {c['type'] for c in
                  (vmi or {}).get('status', {}).get('conditions', [])}
    if call.action == power.RUN_STRATEGY:
        return call.target == 'vm'
    if call.action == 'start':
        if strategy in ('Always', 'Once') or not _final(vmi):
            return False
        return not (strategy == 'RerunOnFailure' and vmi is not None
                    and vmi['status']['phase'] == 'Failed')
    if call.action == 'stop':
        if strategy in ('Always', 'Once'):
            return True
        if _final(vmi):
            return False
        if strategy == 'Halted':
            old = vmi['spec'].get('terminationGracePeriodSeconds')
            new = call.body.get('gracePeriod')
            return new is not None and (old is None or new < old)
        return True
    if call.action == 'restart':
        return strategy not in ('Halted', 'Once') and not _final(vmi)
    running = vmi is not None and vmi['status']['phase'] == 'Running'
    if call.action == 'softreboot':
        return running and 'Paused' not in conditions
    if call.action == 'unpause':
        return running and 'Paused' in conditions
    return False


STRATEGIES = ['Always', 'Halted', 'Manual', 'RerunOnFailure', 'Once',
              'running-true', 'running-false']
VMIS = [None, fx.vmi('Pending'), fx.vmi(), fx.vmi(grace=0),
        fx.vmi(conditions=['Paused']), fx.vmi(conditions=AGENT),
        fx.vmi('Succeeded'), fx.vmi('Failed'), fx.vmi(deleting=True)]
PENDING = [(), ('Start',), ('Stop',), ('Stop', 'Start')]
EXPECTED_EMPTY = {
    'On': ('On', 'PoweringOn'), 'ForceOn': ('On', 'PoweringOn'),
    'ForceOff': ('Off', 'PoweringOff'),
    'GracefulShutdown': ('Off', 'PoweringOff'),
    'GracefulRestart': ('PoweringOn',),
    'ForceRestart': ('PoweringOn', 'PoweringOff'),
    'PushPowerButton': (),
}


def _matrix_vm(strategy, pending):
    if strategy.startswith('running-'):
        return _vm(None, pending, running=strategy == 'running-true')
    return _vm(strategy, pending)


@pytest.mark.parametrize('strategy', STRATEGIES)
def test_every_plan_is_accepted_by_kubevirt(strategy):
    for pending, vmi, reset in itertools.product(
            PENDING, VMIS, power.SUPPORTED_RESET_TYPES):
        vm = _matrix_vm(strategy, pending)
        state = power.power_state(vm, vmi)
        try:
            plan = power.reset_plan(reset, vm, vmi)
        except power.TransitionInProgress:
            assert state in ('PoweringOn', 'PoweringOff'), (reset, state)
            continue
        if not plan:
            assert state in EXPECTED_EMPTY[reset], (reset, state)
        for call in plan:
            assert _kubevirt_accepts(call, vm, vmi), (reset, state, call)
            vm = _after(call, vm)
        if plan and reset in ('ForceOff', 'GracefulShutdown'):
            # Nothing KubeVirt would act on brings the VM back.
            assert 'Start' not in power._pending(vm), (reset, state)
            assert power.run_strategy(vm) not in ('Always', 'Once')
        if plan and reset == 'ForceRestart' and state == 'PoweringOff':
            assert power.run_strategy(vm) == 'Always'


def _after(call, vm):
    """The VM after KubeVirt accepted ``call`` (lifecycle.go)."""
    if call.action == power.RUN_STRATEGY:
        vm = jsonpatch.apply(vm, power.strategy_ops(vm, call.body))
        spec = vm['spec']
        assert not ('running' in spec and 'runStrategy' in spec)
        assert power.run_strategy(vm) == call.body
        return vm
    if call.action != 'stop':
        return vm
    if power.run_strategy(vm) in ('Always', 'Once'):
        return jsonpatch.apply(vm, power.strategy_ops(vm, 'Halted'))
    vm = jsonpatch.apply(vm, [])
    vm['status']['stateChangeRequests'] = [{'action': 'Stop'}]
    return vm


@pytest.mark.parametrize('vm, strategy, expected', [
    (_vm('Always'), 'Always', []),
    (_vm('Always'), 'Manual',
     [jsonpatch.replace('/spec/runStrategy', 'Manual')]),
    (_vm(None, running=True), 'Halted',
     [jsonpatch.add('/spec/running', False)]),
    (_vm(None, running=True), 'Manual',
     [jsonpatch.remove('/spec/running'),
      jsonpatch.add('/spec/runStrategy', 'Manual')]),
])
def test_strategy_ops(vm, strategy, expected):
    assert power.strategy_ops(vm, strategy) == expected


def test_starts():
    assert power.starts(START) and power.starts(RESTART0)
    assert power.starts(ALWAYS)
    assert not any(power.starts(c) for c in (STOP0, MANUAL, HALTED))


@pytest.mark.parametrize('calls, vm, expected', [
    ([], _vm('Always'), True),
    ([START], _vm('Halted'), True),
    ([ALWAYS], _vm('Once'), True),
    # The stop only sets Halted: an unseen restart would win.
    ([STOP0], _vm('Always'), True),
    ([STOP0], _vm('Once'), True),
    ([STOP0], _vm(None, running=True), True),
    # The stop replaces every pending request, or shortens a stop.
    ([STOP0], _vm('Manual'), False),
    ([STOP0], _vm('RerunOnFailure'), False),
    ([STOP0], _vm('Halted'), False),
    ([Call('vmi', 'softreboot', {})], _vm('Always'), False),
    ([Call('vmi', 'unpause', {})], _vm('Always'), False),
])
def test_needs_live_check(calls, vm, expected):
    assert power.needs_live_check(calls, vm) is expected


# --- GracefulRestart sees a change the VMI has not taken yet. ---

ROOT = {'name': 'root', 'disk': {'bus': 'virtio'}, 'bootOrder': 1}
NIC = {'name': 'default', 'masquerade': {}, 'bootOrder': 2}
CDROM = {'name': 'vmedia-cd', 'cdrom': {'bus': 'sata'}, 'bootOrder': 1}
ROOT_VOLUME = {'name': 'root', 'dataVolume': {'name': 'node-0-root'}}
CD_VOLUME = {'name': 'vmedia-cd', 'dataVolume': {'name': 'node-0-cd'}}


def _running(disks=(ROOT,), interfaces=(NIC,), volumes=(ROOT_VOLUME,),
             domain=None, **kw):
    """An Always VM and the VMI made from its template (agent connected)."""
    vm = fx.vm(strategy='Always', disks=disks, interfaces=interfaces,
               volumes=volumes, domain=domain, **kw)
    return vm, fx.vmi(conditions=AGENT, spec=vm['spec']['template']['spec'])


def _edit(vm, change):
    vm = jsonpatch.apply(vm, [])
    change(vm['spec']['template']['spec'])
    return vm


def _insert(spec):
    spec['domain']['devices']['disks'][0]['bootOrder'] = 2
    spec['domain']['devices']['disks'].append(dict(CDROM))
    spec['volumes'].append(dict(CD_VOLUME))


def _pxe_first(spec):
    spec['domain']['devices']['disks'][0]['bootOrder'] = 2
    spec['domain']['devices']['interfaces'][0]['bootOrder'] = 1


def _uefi(spec):
    spec['domain']['firmware'] = {'bootloader': {'efi': {}}}


def _new_image(spec):
    spec['volumes'][0]['dataVolume']['name'] = 'node-0-other'


@pytest.mark.parametrize('change', [_insert, _pxe_first, _uefi, _new_image])
def test_graceful_restart_applies_a_change_not_yet_flagged(change):
    """Before virt-controller sets RestartRequired, the VMI tells."""
    vm, vmi = _running()
    assert power.reset_plan('GracefulRestart', vm, vmi) == [
        Call('vmi', 'softreboot', {})]
    assert power.reset_plan('GracefulRestart', _edit(vm, change), vmi) == [
        RESTART]


def test_graceful_restart_applies_pending_bios_settings():
    vm, vmi = _running(annotations={
        'sushy-kubevirt.io/bios-pending': '{"vmi": "vmi-1", "attributes": '
                                          '{"ProcTurboMode": "Disabled"}}'})
    assert power.reset_plan('GracefulRestart', vm, vmi) == [RESTART]


def test_graceful_restart_ignores_what_kubevirt_defaults():
    """Defaults KubeVirt adds to the VMI are no pending change."""
    vm, vmi = _running(domain={'firmware': {'bootloader': {'efi': {}}}})
    vmi['spec']['domain']['firmware']['bootloader']['efi'][
        'secureBoot'] = True
    vmi['spec']['domain']['devices']['disks'][0]['disk'] = {}
    vmi['spec']['domain']['devices']['autoattachSerialConsole'] = True
    vmi['spec']['domain']['devices']['interfaces'].append(
        {'name': 'pod', 'masquerade': {}})
    assert power.reset_plan('GracefulRestart', vm, vmi) == [
        Call('vmi', 'softreboot', {})]
