"""KubeVirt: VM controller, simulated VMI lifecycle and subresources.

Follows virt-controller's VM controller (run strategies, state change
requests, printableStatus precedence, conditions) and virt-api's
subresource handlers (bodies, 409 cases and messages).  VMIs are not run:
they walk Pending -> Scheduling -> Scheduled -> Running after configurable
delays (KWOK-style stages) and shut down over their grace period in
simulated time.  A simulated guest agent, when enabled, connects a stage
delay after Running (virt-handler's AgentConnected condition).
"""

import copy
import datetime
import hashlib
import json

from sushy_kubevirt.simulator import admission
from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator import clock as sim_clock
from sushy_kubevirt.simulator import status as sim_status
from sushy_kubevirt.simulator import store as sim_store

GROUP = 'kubevirt.io'
VERSION = 'v1'
SUBRESOURCES = 'subresources.kubevirt.io/v1'
VM_RT = sim_store.ResourceType(GROUP, VERSION, 'virtualmachines',
                               'VirtualMachine', short_names=('vm', 'vms'))
VMI_RT = sim_store.ResourceType(GROUP, VERSION, 'virtualmachineinstances',
                                'VirtualMachineInstance',
                                short_names=('vmi', 'vmis'))
FINALIZERS = ['kubevirt.io/virtualMachineControllerFinalize',
              'foregroundDeleteVirtualMachine']
ANN_GENERATION = 'kubevirt.io/vm-generation'
ANN_TEMPLATE_HASH = 'simulator.sushy-kubevirt.io/template-hash'
ANN_GUEST_AGENT = 'simulator.sushy-kubevirt.io/guest-agent'
DEFAULT_GRACE = 30
DEFAULT_DELAYS = {'Pending': 0.0, 'Scheduling': 0.2, 'Scheduled': 0.3,
                  'Running': 0.5, 'Shutdown': None, 'AgentConnected': 0.5}
GUEST_OS_INFO = {'id': 'fedora', 'name': 'Fedora Linux',
                 'prettyName': 'Fedora Linux 40 (Cloud Edition)',
                 'version': '40 (Cloud Edition)', 'versionId': '40',
                 'kernelRelease': '6.8.5-301.fc40.x86_64',
                 'kernelVersion': '#1 SMP PREEMPT_DYNAMIC',
                 'machine': 'x86_64'}
NEXT_PHASE = {'': 'Pending', 'Pending': 'Scheduling',
              'Scheduling': 'Scheduled', 'Scheduled': 'Running'}
FINAL = ('Succeeded', 'Failed')
DV_READY = ('Succeeded', 'WaitForFirstConsumer', 'PendingPopulation')
RESTART_REQUIRED = ('a non-live-updatable field was changed in the '
                    'template spec')
NODE = 'sim-node-0'
ACCEPTED = (202, None)


# helpers ------------------------------------------------------------------

def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def stable_mac(namespace, name, iface):
    """A locally administered unicast MAC derived from the names."""
    digest = hashlib.sha1(
        ('%s/%s/%s' % (namespace, name, iface)).encode()).digest()
    return '02:' + ':'.join('%02x' % b for b in digest[:5])


def stable_ip(namespace, name, iface):
    digest = hashlib.sha1(
        ('ip/%s/%s/%s' % (namespace, name, iface)).encode()).digest()
    return '10.%d.%d.%d' % (128 + digest[0] % 64, digest[1],
                            1 + digest[2] % 254)


def run_strategy(vm):
    spec = vm.get('spec') or {}
    if spec.get('runStrategy'):
        return spec['runStrategy']
    return 'Always' if spec.get('running') else 'Halted'


def phase_of(obj):
    return (obj.get('status') or {}).get('phase', '') if obj else ''


def is_final(vmi):
    return phase_of(vmi) in FINAL


def deleting(obj):
    return bool(obj and obj['metadata'].get('deletionTimestamp'))


def condition(obj, ctype):
    for cond in (obj or {}).get('status', {}).get('conditions') or ():
        if cond.get('type') == ctype:
            return cond
    return None


def has_true(obj, ctype):
    cond = condition(obj, ctype)
    return bool(cond and cond.get('status') == 'True')


def make_condition(ctype, value, reason='', message=''):
    cond = {'type': ctype, 'status': value, 'lastProbeTime': None,
            'lastTransitionTime': now()}
    if reason:
        cond['reason'] = reason
    if message:
        cond['message'] = message
    return cond


def put_condition(status, cond):
    """Add or replace a condition, keeping it untouched if unchanged."""
    conds = status.setdefault('conditions', [])
    for idx, old in enumerate(conds):
        if old.get('type') == cond['type']:
            if all(old.get(k) == cond.get(k)
                   for k in ('status', 'reason', 'message')):
                return
            conds[idx] = cond
            return
    conds.append(cond)


def drop_condition(status, ctype):
    status['conditions'] = [c for c in status.get('conditions') or ()
                            if c.get('type') != ctype]


def agent_condition():
    """AgentConnected as virt-handler sets it (probe time, no reason)."""
    return {'type': 'AgentConnected', 'status': 'True',
            'lastProbeTime': now(), 'lastTransitionTime': None}


def template_hash(vm):
    spec = ((vm.get('spec') or {}).get('template') or {}).get('spec') or {}
    return hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def dv_names(spec):
    for vol in (spec or {}).get('volumes') or ():
        name = (vol.get('dataVolume') or {}).get('name')
        if name:
            yield name


def first_request(vm):
    reqs = (vm.get('status') or {}).get('stateChangeRequests') or []
    return reqs[0] if reqs else None


def has_stop_request_for(vm, vmi):
    req = first_request(vm)
    return bool(req and vmi and req.get('action') == 'Stop'
                and req.get('uid') == vmi['metadata']['uid'])


def has_start_request(vm):
    req = first_request(vm)
    return bool(req and req.get('action') == 'Start')


def trim_needed(req, vmi):
    """virt-controller's isTrimFirstChangeRequestNeeded."""
    if req.get('action') == 'Stop':
        return (vmi is None or not req.get('uid')
                or req['uid'] != vmi['metadata']['uid'])
    if req.get('action') == 'Start':
        return bool(vmi and not deleting(vmi) and not is_final(vmi))
    return False


def stopped_status(vm):
    """Status of a VM with no VMI and settled volumes (used by seeding)."""
    status = vm.setdefault('status', {})
    status.update(printableStatus='Stopped', created=False, ready=False)
    put_condition(status, make_condition('Ready', 'False', 'VMINotExists',
                                         'VMI does not exist'))


def new_vmi(vm, paused=False):
    """The VMI virt-controller creates from ``vm``'s template."""
    meta = vm['metadata']
    template = copy.deepcopy(vm['spec']['template'])
    tmeta = template.get('metadata') or {}
    spec = template.get('spec') or {}
    efi = (((spec.get('domain') or {}).get('firmware') or {})
           .get('bootloader') or {}).get('efi')
    if efi is not None:
        efi.setdefault('secureBoot', True)
    if paused:
        spec['startStrategy'] = 'Paused'
    annotations = dict(tmeta.get('annotations') or {})
    annotations[ANN_GENERATION] = str(meta.get('generation', 1))
    annotations[ANN_TEMPLATE_HASH] = template_hash(vm)
    labels = dict(tmeta.get('labels') or {})
    return {'apiVersion': '%s/%s' % (GROUP, VERSION),
            'kind': 'VirtualMachineInstance',
            'metadata': {'name': meta['name'], 'namespace': meta['namespace'],
                         'labels': labels, 'annotations': annotations,
                         'finalizers': list(FINALIZERS),
                         'ownerReferences': [cdi.owner_ref(vm)]},
            'spec': spec}


def interfaces_status(vmi):
    meta = vmi['metadata']
    result = []
    for idx, iface in enumerate(
            vmi['spec'].get('domain', {}).get('devices', {})
            .get('interfaces') or ()):
        name = iface.get('name', 'default')
        ip = stable_ip(meta['namespace'], meta['name'], name)
        result.append({
            'name': name, 'interfaceName': 'eth%d' % idx,
            'mac': iface.get('macAddress') or stable_mac(
                meta['namespace'], meta['name'], name),
            'ipAddress': ip, 'ipAddresses': [ip], 'queueCount': 1,
            'infoSource': 'domain, guest-agent'})
    return result


# errors as virt-api writes them -----------------------------------------

def _details(resource, name):
    return {'name': name, 'group': GROUP, 'kind': resource}


def conflict(resource, name, message):
    return sim_status.ApiError(
        409, 'Conflict', 'Operation cannot be fulfilled on %s.%s "%s": %s'
        % (resource, GROUP, name, message), details=_details(resource, name))


def not_found(resource, name):
    return sim_status.ApiError(
        404, 'NotFound', '%s.%s "%s" not found' % (resource, GROUP, name),
        details=_details(resource, name))


def forbidden(resource, name, message):
    return sim_status.ApiError(
        403, 'Forbidden', '%s.%s "%s" is forbidden: %s'
        % (resource, GROUP, name, message), details=_details(resource, name))


def bad_request(message):
    return sim_status.ApiError(400, 'BadRequest', message)


def internal(message):
    return sim_status.ApiError(
        500, 'InternalError', 'Internal error occurred: %s' % message,
        details={'causes': [{'message': message}]})


def _options(body, ints=()):
    body = body or {}
    if not isinstance(body, dict):
        raise bad_request('Can not unmarshal Request body to struct, '
                          'error: expected an object')
    for key in ints:
        value = body.get(key)
        if value is not None and (not isinstance(value, int)
                                  or isinstance(value, bool)):
            raise bad_request(
                'Can not unmarshal Request body to struct, error: '
                'json: cannot unmarshal %s into Go struct field .%s of '
                'type int64' % (type(value).__name__, key))
    return body, body.get('dryRun') == ['All']


# the controller -----------------------------------------------------------

class KubeVirt:
    """VM controller, VMI lifecycle and subresource handlers."""

    def __init__(self, sim):
        self.sim = sim
        self.store = sim.store
        self.delays = sim_clock.stage_delays(
            DEFAULT_DELAYS, getattr(sim, 'stage_delays', None))
        self.clock = sim_clock.Clock(getattr(sim, 'time_scale', 1.0))
        self.scheduler = sim_clock.Scheduler(self.clock, 'sim-kubevirt')
        self._dv_users = {}     # (ns, dv name) -> {vm/vmi name}
        self._entered = {}      # vmi uid -> (phase, sim time)
        self._shutdown = {}     # vmi uid -> sim time the shutdown began
        self._agent = {}        # vmi uid -> sim time the guest agent is up
        self.guest_agent = bool(getattr(sim, 'guest_agent', False))

    def start(self):
        self.store.register(VM_RT)
        self.store.register(VMI_RT)
        admission.register(self.sim, VM_RT)
        for action in ('start', 'stop', 'restart'):
            self.sim.register_subresource(
                SUBRESOURCES, 'virtualmachines', action,
                getattr(self, 'vm_' + action))
        for action in ('pause', 'unpause', 'softreboot'):
            self.sim.register_subresource(
                SUBRESOURCES, 'virtualmachineinstances', action,
                getattr(self, 'vmi_' + action))
        self.store.subscribe(self.on_event)
        self.scheduler.start()
        return self

    def stop(self):
        self.scheduler.stop()

    # events -------------------------------------------------------------

    def on_event(self, event, rt, obj, old):
        meta = obj.get('metadata') or {}
        ns, name = meta.get('namespace'), meta.get('name')
        if rt.key == VM_RT.key:
            template = (obj.get('spec') or {}).get('template') or {}
            self._index(ns, name, template.get('spec'))
            self.enqueue_vm(ns, name)
        elif rt.key == VMI_RT.key:
            if event == 'DELETED':
                self._entered.pop(meta.get('uid'), None)
                self._shutdown.pop(meta.get('uid'), None)
                self._agent.pop(meta.get('uid'), None)
            self._index(ns, name, obj.get('spec'))
            self.enqueue_vmi(ns, name)
            self.enqueue_vm(ns, name)
        elif rt.key == cdi.DV_RT.key:
            for user in list(self._dv_users.get((ns, name), ())):
                self.enqueue_vm(ns, user)
                self.enqueue_vmi(ns, user)
            for ref in meta.get('ownerReferences') or ():
                if ref.get('kind') == 'VirtualMachine':
                    self.enqueue_vm(ns, ref.get('name'))

    def _index(self, ns, name, spec):
        for dv in dv_names(spec):
            self._dv_users.setdefault((ns, dv), set()).add(name)

    def enqueue_vm(self, ns, name, delay=0.0):
        self.scheduler.call_later(delay, lambda: self.sync_vm(ns, name),
                                  key=('vm', ns, name))

    def enqueue_vmi(self, ns, name, delay=0.0):
        self.scheduler.call_later(delay, lambda: self.sync_vmi(ns, name),
                                  key=('vmi', ns, name))

    # VM controller ------------------------------------------------------

    def sync_vm(self, ns, name):
        vm = self.store.try_get(VM_RT, ns, name)
        if vm is None:
            return
        vmi = self.store.try_get(VMI_RT, ns, name)
        if deleting(vm):
            if vmi is not None:
                self.stop_vmi(vmi)
        else:
            ready = self.ensure_datavolumes(vm)
            self.sync_run_strategy(vm, vmi, ready)
            vmi = self.store.try_get(VMI_RT, ns, name)
        self.update_status(ns, name, vmi)

    def ensure_datavolumes(self, vm):
        """Create missing template DataVolumes; True when all are ready."""
        ready = True
        ns = vm['metadata']['namespace']
        for template in vm['spec'].get('dataVolumeTemplates') or ():
            dv = self.store.try_get(cdi.DV_RT, ns, template['metadata'][
                'name'])
            if dv is None:
                ready = False
                try:
                    self.store.create(cdi.DV_RT,
                                      cdi.dv_from_template(vm, template))
                except sim_status.ApiError as exc:
                    if exc.code != 409:
                        raise
            elif phase_of(dv) not in DV_READY:
                ready = False
        return ready

    def sync_run_strategy(self, vm, vmi, dvs_ready):
        strategy = run_strategy(vm)
        if strategy == 'Always':
            if vmi is not None:
                if has_stop_request_for(vm, vmi) or is_final(vmi):
                    self.stop_vmi(vmi)
            else:
                self.start_vmi(vm, dvs_ready)
        elif strategy == 'RerunOnFailure':
            if vmi is not None:
                failed = phase_of(vmi) == 'Failed'
                if not deleting(vmi) and (has_stop_request_for(vm, vmi)
                                          or is_final(vmi)):
                    self.stop_vmi(vmi)
                    if failed:
                        self.add_requests(vm, [{'action': 'Start'}],
                                          append=True)
            elif (has_start_request(vm) or (vm.get('status') or {}).get(
                    'runStrategy') != strategy):
                self.start_vmi(vm, dvs_ready)
        elif strategy == 'Manual':
            if vmi is not None:
                if has_stop_request_for(vm, vmi):
                    self.stop_vmi(vmi)
            elif has_start_request(vm):
                self.start_vmi(vm, dvs_ready)
        elif strategy == 'Halted':
            if vmi is None:
                if has_start_request(vm):
                    self.store.mutate(VM_RT, vm['metadata']['namespace'],
                                      vm['metadata']['name'], _set_running)
            else:
                self.stop_vmi(vmi)
        elif strategy == 'Once':
            if vmi is None:
                self.start_vmi(vm, dvs_ready)

    def start_vmi(self, vm, dvs_ready):
        if not dvs_ready:
            return
        req = first_request(vm) or {}
        paused = (req.get('action') == 'Start'
                  and (req.get('data') or {}).get('paused') == 'true')
        ns, name = vm['metadata']['namespace'], vm['metadata']['name']
        self.store.mutate(VM_RT, ns, name,
                          lambda o: drop_condition(o.setdefault('status', {}),
                                                   'RestartRequired'),
                          subresource='status')
        try:
            self.store.create(VMI_RT, new_vmi(vm, paused))
        except sim_status.ApiError as exc:
            if exc.code != 409:
                raise

    def stop_vmi(self, vmi):
        if deleting(vmi):
            return
        try:
            self.store.delete(VMI_RT, vmi['metadata']['namespace'],
                              vmi['metadata']['name'])
        except sim_status.ApiError as exc:
            if exc.code != 404:
                raise

    def add_requests(self, vm, changes, append=False):
        def change(obj):
            status = obj.setdefault('status', {})
            status['stateChangeRequests'] = (
                (status.get('stateChangeRequests') or []) + changes
                if append else changes)
        self.store.mutate(VM_RT, vm['metadata']['namespace'],
                          vm['metadata']['name'], change,
                          subresource='status')

    def update_status(self, ns, name, vmi):
        dvs = {}

        def change(vm):
            for dv in dv_names(vm['spec'].get('template', {}).get('spec')):
                if dv not in dvs:
                    dvs[dv] = self.store.try_get(cdi.DV_RT, ns, dv)
            compute_status(vm, vmi, dvs)
        try:
            self.store.mutate(VM_RT, ns, name, change, subresource='status')
        except sim_status.ApiError as exc:
            if exc.code != 404:
                raise

    # VMI lifecycle ------------------------------------------------------

    def sync_vmi(self, ns, name):
        vmi = self.store.try_get(VMI_RT, ns, name)
        if vmi is None:
            return
        uid = vmi['metadata']['uid']
        if deleting(vmi):
            self.shut_down(vmi)
            return
        phase = phase_of(vmi)
        if phase == 'Running':
            self.sync_agent(vmi)
            return
        target = NEXT_PHASE.get(phase)
        if target is None:
            return
        if target == 'Scheduling' and not self.volumes_ready(vmi):
            return
        entered_phase, entered = self._entered.get(uid, (None, 0.0))
        if entered_phase != phase:
            entered = self.clock.now()
            self._entered[uid] = (phase, entered)
        remaining = entered + self.delays[target] - self.clock.now()
        if remaining > 0:
            self.enqueue_vmi(ns, name, remaining)
            return
        self._entered[uid] = (target, self.clock.now())
        self.set_vmi_status(vmi, lambda status: enter_phase(vmi, status,
                                                            target))

    def has_agent(self, vmi):
        """The VMI's guest runs an agent: annotation, else the default."""
        value = (vmi['metadata'].get('annotations') or {}).get(
            ANN_GUEST_AGENT)
        if value is None:
            return self.guest_agent
        return value.strip().lower() == 'true'

    def sync_agent(self, vmi):
        """Connect the guest agent a stage delay after the guest booted.

        The guest boots once the VMI runs unpaused; a softreboot restarts
        the wait (the agent drops while the guest reboots).
        """
        uid = vmi['metadata']['uid']
        if (not self.has_agent(vmi) or condition(vmi, 'AgentConnected')
                or has_true(vmi, 'Paused')):
            return
        due = self._agent.setdefault(
            uid, self.clock.now() + self.delays['AgentConnected'])
        remaining = due - self.clock.now()
        if remaining > 0:
            self.enqueue_vmi(vmi['metadata']['namespace'],
                             vmi['metadata']['name'], remaining)
            return

        def connect(status):
            if status.get('phase') != 'Running':
                return
            put_condition(status, agent_condition())
            status['guestOSInfo'] = dict(GUEST_OS_INFO)
        self.set_vmi_status(vmi, connect)

    def volumes_ready(self, vmi):
        ns = vmi['metadata']['namespace']
        waiting = [dv for dv in dv_names(vmi['spec'])
                   if phase_of(self.store.try_get(cdi.DV_RT, ns, dv))
                   != 'Succeeded']
        if waiting:
            cond = make_condition('DataVolumesReady', 'False',
                                  'NotAllDVsReady',
                                  'Not all of the VMI\'s DVs are ready')
        else:
            cond = make_condition('DataVolumesReady', 'True', 'AllDVsReady',
                                  'All of the VMI\'s DVs are bound and ready')
        self.set_vmi_status(vmi, lambda status: put_condition(status, cond))
        return not waiting

    def shut_down(self, vmi):
        """Finish a deleted VMI after its (simulated) grace period."""
        uid = vmi['metadata']['uid']
        ns, name = vmi['metadata']['namespace'], vmi['metadata']['name']
        if not is_final(vmi):
            grace = vmi['spec'].get('terminationGracePeriodSeconds')
            grace = DEFAULT_GRACE if grace is None else grace
            if self.delays.get('Shutdown') is not None:
                grace = min(grace, self.delays['Shutdown'])
            if phase_of(vmi) not in ('Scheduled', 'Running'):
                grace = 0
            began = self._shutdown.setdefault(uid, self.clock.now())
            remaining = began + grace - self.clock.now()
            if remaining > 0:
                self.enqueue_vmi(ns, name, remaining)
                return
            self.set_vmi_status(vmi, lambda status: enter_phase(
                vmi, status, 'Succeeded'))
        self._mutate_vmi(vmi, lambda o: o['metadata'].__setitem__(
            'finalizers', []), None)

    def set_vmi_status(self, vmi, fn):
        self._mutate_vmi(vmi, lambda o: fn(o.setdefault('status', {})),
                         'status')

    def _mutate_vmi(self, vmi, fn, subresource):
        uid = vmi['metadata']['uid']

        def change(obj):
            if obj['metadata']['uid'] == uid:
                fn(obj)
        try:
            self.store.mutate(VMI_RT, vmi['metadata']['namespace'],
                              vmi['metadata']['name'], change,
                              subresource=subresource)
        except sim_status.ApiError as exc:
            if exc.code != 404:
                raise

    # subresources: virtualmachines ----------------------------------------

    def _vm(self, ns, name):
        vm = self.store.try_get(VM_RT, ns, name)
        if vm is None:
            raise not_found('virtualmachine', name)
        return vm

    def vm_start(self, ns, name, body, user):
        body, dry = _options(body)
        vm = self._vm(ns, name)
        vmi = self.store.try_get(VMI_RT, ns, name)
        if vmi is not None and phase_of(vmi) not in FINAL + ('Unknown', ''):
            raise conflict('virtualmachine', name, 'VM is already running')
        paused = bool(body.get('paused'))
        data = {'paused': 'true'} if paused else None
        start = dict({'action': 'Start'}, **({'data': data} if data else {}))
        strategy = run_strategy(vm)
        if strategy == 'Halted':
            if paused:
                self._request(vm, [start], dry)
            elif not dry:
                self.store.mutate(VM_RT, ns, name, _set_running)
        elif strategy in ('RerunOnFailure', 'Manual'):
            phase = phase_of(vmi) if vmi else None
            if strategy == 'RerunOnFailure' and phase == 'Failed':
                raise conflict('virtualmachine', name,
                               'RerunOnFailure does not support starting VM '
                               'from failed state')
            if (strategy == 'RerunOnFailure' and phase == 'Succeeded') or (
                    strategy == 'Manual' and phase in FINAL):
                changes = [{'action': 'Stop',
                            'uid': vmi['metadata']['uid']}, start]
            else:
                changes = [start]
            self._request(vm, changes, dry)
        else:
            raise conflict('virtualmachine', name,
                           '%s does not support manual start requests'
                           % strategy)
        return ACCEPTED

    def vm_stop(self, ns, name, body, user):
        body, dry = _options(body, ints=('gracePeriod',))
        grace = body.get('gracePeriod')
        vm = self._vm(ns, name)
        strategy = run_strategy(vm)
        vmi = self.store.try_get(VMI_RT, ns, name)
        live = vmi is not None and not is_final(vmi)
        old_grace = (vmi or {}).get('spec', {}).get(
            'terminationGracePeriodSeconds')
        if live and grace is not None and not dry:
            self._mutate_vmi(vmi, lambda o: o['spec'].__setitem__(
                'terminationGracePeriodSeconds', grace), None)
        if strategy in ('Halted', 'Manual'):
            if not live:
                raise conflict('virtualmachine', name, 'VM is not running')
            if strategy == 'Halted' and (grace is None or (
                    old_grace is not None and grace >= old_grace)):
                raise conflict('virtualmachine', name,
                               'Halted only supports manual stop requests '
                               'with a shorter graceperiod')
            self._request(vm, [{'action': 'Stop',
                                'uid': vmi['metadata']['uid']}], dry)
        elif not dry:
            self.store.mutate(VM_RT, ns, name, _set_halted)
        return ACCEPTED

    def vm_restart(self, ns, name, body, user):
        body, dry = _options(body, ints=('gracePeriodSeconds',))
        grace = body.get('gracePeriodSeconds')
        if grace is not None and grace > 0:
            raise bad_request('For force restart, only gracePeriod=0 is '
                              'supported for now')
        if grace is not None and grace < 0:
            raise bad_request('gracePeriod has to be greater or equal to 0')
        vm = self._vm(ns, name)
        strategy = run_strategy(vm)
        if strategy in ('Halted', 'Once'):
            raise conflict('virtualmachine', name,
                           'RunStategy %s does not support manual restart '
                           'requests' % strategy)
        vmi = self.store.try_get(VMI_RT, ns, name)
        if vmi is None:
            raise conflict('virtualmachine', name,
                           'VM is not running: Halted')
        self._request(vm, [{'action': 'Stop', 'uid': vmi['metadata']['uid']},
                           {'action': 'Start'}], dry)
        if grace == 0 and not dry and phase_of(vmi) in ('Scheduled',
                                                        'Running'):
            # virt-api deletes the virt-launcher pod: the VMI fails at once.
            self.set_vmi_status(vmi, lambda status: enter_phase(
                vmi, status, 'Failed'))
        return ACCEPTED

    def _request(self, vm, changes, dry):
        """virt-api's getChangeRequestJson applied atomically."""
        only_stop = len(changes) == 1 and changes[0]['action'] == 'Stop'

        def change(obj):
            status = obj.setdefault('status', {})
            if status.get('stateChangeRequests') and not only_stop:
                raise internal('unable to complete request: stop/start '
                               'already underway')
            status['stateChangeRequests'] = changes
            status.pop('startFailure', None)
        if dry:
            change(copy.deepcopy(vm))
            return
        self.store.mutate(VM_RT, vm['metadata']['namespace'],
                          vm['metadata']['name'], change,
                          subresource='status')

    # subresources: virtualmachineinstances ------------------------------

    def _vmi(self, ns, name):
        vmi = self.store.try_get(VMI_RT, ns, name)
        if vmi is None:
            raise not_found('virtualmachineinstance', name)
        return vmi

    def vmi_pause(self, ns, name, body, user):
        _body, dry = _options(body)
        vmi = self._vmi(ns, name)
        if phase_of(vmi) != 'Running':
            raise conflict('virtualmachineinstance', name,
                           'VM is not running')
        if vmi['spec'].get('livenessProbe') is not None:
            raise forbidden('virtualmachineinstance', name,
                            'Pausing VMIs with LivenessProbe is currently '
                            'not supported')
        if condition(vmi, 'Paused') is not None:
            raise conflict('virtualmachineinstance', name,
                           'VMI is already paused')
        if not dry:
            self.set_vmi_status(vmi, lambda status: put_condition(
                status, paused_condition()))

    def vmi_unpause(self, ns, name, body, user):
        _body, dry = _options(body)
        vmi = self._vmi(ns, name)
        if phase_of(vmi) != 'Running' or condition(vmi, 'Paused') is None:
            raise conflict('virtualmachineinstance', name,
                           'VMI is not paused')
        if not dry:
            self.set_vmi_status(vmi, lambda status: drop_condition(
                status, 'Paused'))

    def vmi_softreboot(self, ns, name, body, user):
        vmi = self._vmi(ns, name)
        if phase_of(vmi) != 'Running':
            raise conflict('virtualmachineinstance', name,
                           'VM is not running')
        if has_true(vmi, 'Paused'):
            raise conflict('virtualmachineinstance', name, 'VMI is paused')
        domain = vmi['spec'].get('domain') or {}
        acpi = ((domain.get('features') or {}).get('acpi') or {}).get(
            'enabled')
        if condition(vmi, 'AgentConnected') is None and acpi is False:
            raise conflict('virtualmachineinstance', name,
                           'VMI neither have the agent connected nor the '
                           'ACPI feature enabled')
        if domain.get('rebootPolicy') == 'Terminate':
            # The guest reboots and the VMI ends; the VM controller acts.
            self.set_vmi_status(vmi, lambda status: enter_phase(
                vmi, status, 'Succeeded'))
            return
        # The VMI survives; its agent drops while the guest reboots.
        self._agent.pop(vmi['metadata']['uid'], None)
        self.set_vmi_status(vmi, lambda status: drop_condition(
            status, 'AgentConnected'))


def _set_running(vm):
    if vm['spec'].get('running') is not None:
        vm['spec']['running'] = True
    else:
        vm['spec']['runStrategy'] = 'Always'


def _set_halted(vm):
    if vm['spec'].get('running') is not None:
        vm['spec']['running'] = False
    else:
        vm['spec']['runStrategy'] = 'Halted'


def paused_condition():
    return make_condition('Paused', 'True', 'PausedByUser',
                          'VMI was paused by user')


def enter_phase(vmi, status, phase):
    """Write what virt-controller/virt-handler report on entering phase."""
    if status.get('phase') in FINAL:
        return
    status['phase'] = phase
    status.setdefault('phaseTransitionTimestamps', []).append(
        {'phase': phase, 'phaseTransitionTimestamp': now()})
    if phase == 'Pending':
        status.setdefault('guestOSInfo', {})
        status['qosClass'] = 'Burstable'
    elif phase == 'Scheduled':
        status['nodeName'] = NODE
    elif phase == 'Running':
        status['interfaces'] = interfaces_status(vmi)
        put_condition(status, make_condition('Ready', 'True'))
        if vmi['spec'].get('startStrategy') == 'Paused':
            put_condition(status, paused_condition())
    elif phase in FINAL:
        put_condition(status, make_condition('Ready', 'False',
                                             'PodTerminating'))
        drop_condition(status, 'Paused')
        drop_condition(status, 'AgentConnected')


def printable_status(vm, vmi, dvs):
    """virt-controller's setPrintableStatus precedence (modelled part)."""
    live = vmi is not None and not is_final(vmi)
    if deleting(vm):
        return 'Terminating'
    if live and deleting(vmi):
        return 'Stopping'
    if phase_of(vmi) == 'Running':
        return 'Paused' if has_true(vmi, 'Paused') else 'Running'
    phases = [phase_of(dv) for dv in dvs.values() if dv is not None]
    if 'Failed' in phases:
        return 'DataVolumeError'
    if any(p not in DV_READY for p in phases):
        return 'Provisioning'
    if live:
        return 'Starting'
    return 'Stopped'


def compute_status(vm, vmi, dvs):
    """Fill ``vm['status']`` from the VM, its VMI and its DataVolumes."""
    status = vm.setdefault('status', {})
    reqs = status.get('stateChangeRequests') or []
    if reqs and trim_needed(reqs[0], vmi):
        reqs = reqs[1:]
    if reqs:
        status['stateChangeRequests'] = reqs
    else:
        status.pop('stateChangeRequests', None)
    status['created'] = vmi is not None
    status['ready'] = bool(vmi and not is_final(vmi)
                           and has_true(vmi, 'Ready'))
    if status.get('runStrategy') or vmi is not None:
        status['runStrategy'] = run_strategy(vm)
    synced = {'Ready', 'Failure', 'RestartRequired'}
    if vmi is None:
        put_condition(status, make_condition('Ready', 'False', 'VMINotExists',
                                             'VMI does not exist'))
        status['conditions'] = [c for c in status['conditions']
                                if c['type'] in synced]
    else:
        ready = condition(vmi, 'Ready')
        if ready is None:
            put_condition(status, make_condition(
                'Ready', 'False', 'VMIConditionMissing',
                'VMI is missing the Ready condition'))
        else:
            put_condition(status, dict(ready))
        vmi_conds = [c for c in (vmi.get('status') or {}).get(
            'conditions') or () if c.get('type') not in synced]
        for cond in vmi_conds:
            put_condition(status, dict(cond))
        names = {c['type'] for c in vmi_conds} | synced
        status['conditions'] = [c for c in status['conditions']
                                if c['type'] in names]
        annotations = vmi['metadata'].get('annotations') or {}
        if not is_final(vmi) and not deleting(vmi):
            if annotations.get(ANN_TEMPLATE_HASH) != template_hash(vm):
                put_condition(status, make_condition(
                    'RestartRequired', 'True', message=RESTART_REQUIRED))
            else:
                drop_condition(status, 'RestartRequired')
        if annotations.get(ANN_GENERATION):
            status['observedGeneration'] = int(annotations[ANN_GENERATION])
        status['desiredGeneration'] = vm['metadata'].get('generation', 1)
    status['printableStatus'] = printable_status(vm, vmi, dvs)


def install(sim):
    """Register VMs/VMIs, admission and subresources; start controllers."""
    return KubeVirt(sim).start()
