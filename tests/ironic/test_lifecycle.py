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

"""A real Ironic takes 3 nodes through their whole lifecycle, in parallel.

The ``redfish`` hardware type with ``redfish`` inspection (LLDP too),
``redfish-virtual-media`` boot, ``ramdisk`` deploy, ``redfish`` BIOS
(steps ended on the System's BootProgress) and ``redfish`` firmware (a
BIOS update as a service step), against the emulator under gunicorn (2
workers x 2 threads) and the simulator, Ironic logging in as an Operator
whose account reaches only the VMs' namespace. The nodes differ where a
feature has variants: the boot ISO over HTTPS unverified, over HTTPS
with its CA, over HTTP (:data:`MEDIA_TLS`); a root disk that is a PVC
(:data:`PVC_NODE`); secure boot (:data:`SECURE_NODE`). Each step runs on
the 3 nodes at once; its wall time
per node and the Kubernetes API calls the emulator made meanwhile (the
simulator's request log, watches excluded) are printed as a table. A
failing step names the node, its state and Ironic's ``last_error``.

Run by ``tox -e ironic`` (not collected by the default test run).
"""

import collections
import concurrent.futures
import os
import re
import time

import pytest
import requests
from tests import backend
from tests.functional.emulator import harness
from tests.ironic import client
from tests.ironic import stack

from sushy_kubevirt import config
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import media

GIB = 1024 ** 3
BIOS_SETTING = 'ProcTurboMode'
#: The Metal3 address forms: the System by firmware UUID and by VM name.
ID_FORMS = ('uuid', 'name', 'uuid')
SECURE_NODE = 2
#: How each node's boot ISO is served: over HTTPS with the emulator told
#: not to verify the certificate, over HTTPS with its CA given, over HTTP.
MEDIA_TLS = ('no-verify', 'ca', None)
#: The node whose root disk is a ``persistentVolumeClaim`` volume.
PVC_NODE = 1
IRONIC_REBUILD_BUG = "local variable 'auto_lessee'"
#: Ironic's redfish BIOS poll: a boot not yet at the OS, the System it
#: read (sushy's debug line: request id, BootProgress.LastState), and the
#: step resumed (request id, node).
BOOT_WAIT = re.compile(r'Node (\S+) boot progress: (\w+)\. Waiting for '
                       r'boot progress to reach OS started')
SYSTEM_READ = re.compile(r'\[\S+ (req-\S+) .*Received representation of '
                         r"System .*'boot_progress': (?:None|\{[^}]*"
                         r"'last_state': <\w+\.\w+: '(\w+)'>)")
BIOS_RESUMED = re.compile(r'\[\S+ (req-\S+) .*Detected post-BIOS reboot '
                          r'completion for node (\S+),')


class Node:
    """One VM enrolled in Ironic."""

    def __init__(self, index, sim, emulator_url, auth=None):
        self.index = index
        self.auth = auth
        self.vm = 'vm-%05d' % index
        self.uuid = identity.firmware_uuid(harness.vm(sim, self.vm))
        system_id = self.uuid if ID_FORMS[index] == 'uuid' else self.vm
        self.system_path = '/redfish/v1/Systems/%s' % system_id
        self.redfish = emulator_url + '/redfish/v1/Systems/' + self.uuid
        self.secure = index == SECURE_NODE
        self.media_tls = MEDIA_TLS[index]
        self.ident = self.bios_version = None
        self.rebuild_bug = False

    def get(self, sub=''):
        response = requests.get(self.redfish + sub, auth=self.auth,
                                timeout=10)
        assert response.status_code == 200, (sub, response.text)
        return response.json()


@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    if not os.path.exists(os.path.join(stack.BIN, 'ironic')):
        pytest.skip('Ironic is not installed here: run tox -e ironic')
    # The image check may take its time on a busy host: its size is
    # asserted (_check_active).
    with stack.Stack(tmp_path_factory.mktemp('ironic'), vms=3,
                     accounts=True, settings={
                         'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_WAIT': 5}) as lab:
        yield lab


def _api_calls(sim):
    counts = collections.Counter()
    for (verb, resource), count in sim.request_log.counters().items():
        if verb != 'watch':
            counts['%s %s' % (verb, resource)] += count
    return counts


class Recorder:
    """Runs each step on every node at once and records the table."""

    def __init__(self, lab, nodes):
        self.lab = lab
        self.nodes = nodes
        self.rows = []
        self.notes = []

    def step(self, name, fn):
        before = _api_calls(self.lab.sim)
        times = {}

        def timed(node):
            start = time.monotonic()
            fn(node)
            times[node.index] = time.monotonic() - start

        with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            futures = [pool.submit(timed, node) for node in self.nodes]
            errors = [f.exception() for f in futures if f.exception()]
        calls = _api_calls(self.lab.sim) - before
        self.rows.append((name, times, calls))
        if errors:
            raise AssertionError('step %r failed: %s\nIronic log tail:\n%s'
                                 % (name, '\n'.join(map(str, errors)),
                                    self.lab.ironic.tail()))

    def rename(self, name, note):
        self.rows[-1] = (name,) + self.rows[-1][1:]
        self.notes.append(note)

    def table(self):
        lines = ['', '%-28s %-22s %5s  %s' % (
            'step', 'wall time per node (s)', 'calls', 'API calls')]
        for name, times, calls in self.rows:
            per_node = ' '.join('%5.1f' % times[i] for i in sorted(times))
            detail = ', '.join('%s %d' % item for item in sorted(
                calls.items()))
            lines.append('%-28s %-22s %5d  %s' % (
                name, per_node, sum(calls.values()), detail or '-'))
        return '\n'.join(lines + self.notes)


def test_lifecycle(lab, capsys):
    api = client.Ironic(lab.ironic.url)
    _pvc_disk(lab.sim, 'vm-%05d' % PVC_NODE)
    nodes = [Node(i, lab.sim, lab.emulator.url, lab.admin)
             for i in range(3)]
    run = Recorder(lab, nodes)
    try:
        _lifecycle(lab, api, run)
    finally:
        with capsys.disabled():
            print(run.table())
    log = lab.ironic.log_text()
    syncs = len(re.findall(
        r'Completed power state sync operation, evaluated [1-9]', log))
    assert syncs >= 1, 'no power sync of the nodes ran'
    assert 'does not match expected state' not in log, (
        'the power sync fought a change in progress')


def _lifecycle(lab, api, run):
    def enroll(node):
        capabilities = 'boot_mode:uefi'
        if node.secure:
            capabilities += ',secure_boot:true'
        info = {'redfish_address': lab.emulator.url,
                'redfish_system_id': node.system_path, **lab.credentials}
        if node.media_tls:
            # Ironic publishes this node's boot ISO on the HTTPS server.
            info['external_http_url'] = lab.https_url
        created = api.post('/nodes', {
            'name': 'node-%d' % node.index, 'driver': 'redfish',
            'driver_info': info,
            'boot_interface': 'redfish-virtual-media',
            'deploy_interface': 'ramdisk',
            'inspect_interface': 'redfish',
            'bios_interface': 'redfish',
            'firmware_interface': 'redfish',
            'properties': {'capabilities': capabilities}})
        node.ident = created['uuid']
        api.wait(node.ident, 'enroll')
    run.step('enroll', enroll)

    def manage(node):
        api.provision(node.ident, 'manage')
        api.wait(node.ident, 'manageable')
        settings = api.get('/nodes/%s/bios' % node.ident)['bios']
        assert any(s['name'] == BIOS_SETTING for s in settings), settings
        node.bios_version = node.get()['BiosVersion']
        assert _firmware(api, node) == node.bios_version
    run.step('manage (BIOS, firmware)', manage)

    def inspect(node):
        assert node.get()['PowerState'] == 'Off'
        api.provision(node.ident, 'inspect')
        found = api.wait(node.ident, 'manageable', what='inspect')
        props = found['properties']
        data = api.get('/nodes/%s/inventory' % node.ident)
        # Ironic 39 keeps the CPU count in the inventory, not properties.
        cpu = data['inventory']['cpu']
        assert cpu['count'] == 2, cpu
        lldp = _lldp(node)
        assert lldp, 'no Port of the Chassis reports LLDPReceive'
        assert data['plugin_data'].get('parsed_lldp') == lldp, (
            data['plugin_data'], lldp)
        assert props.get('memory_mb') == 2048, props
        assert props.get('local_gb') == 9, props
        assert props.get('cpu_arch') == 'x86_64', (props, cpu)
        ports = api.get('/nodes/%s/ports' % node.ident)['ports']
        macs = [p['address'] for p in ports]
        nics = [n['MACAddress'] for n in _members(node, '/'
                                                  'EthernetInterfaces')]
        assert sorted(macs) == sorted(m.lower() for m in nics), (macs, nics)
    run.step('inspect', inspect)

    def bios_apply(node):
        _clean(api, node, 'apply_configuration', {'settings': [
            {'name': BIOS_SETTING, 'value': 'Disabled'}]})
        _check_bios(api, node, 'Disabled')
    _bios_step(lab, run, 'clean: bios apply', bios_apply)

    def bios_reset(node):
        _clean(api, node, 'factory_reset', {})
        _check_bios(api, node, 'Enabled')
    _bios_step(lab, run, 'clean: bios factory_reset', bios_reset)

    def provide(node):
        api.provision(node.ident, 'provide')
        api.wait(node.ident, 'available')
    run.step('provide', provide)

    def indicators(node):
        found = api.get('/nodes/%s/management/indicators' % node.ident)
        system = [i for i in found['indicators']
                  if i['component'] == 'system']
        assert system, found
        name = system[0]['name']
        path = '/nodes/%s/management/indicators/%s' % (node.ident, name)
        api.put(path, {'state': 'blinking'})
        assert api.get(path)['state'] == 'blinking'
        assert node.get()['IndicatorLED'] == 'Blinking'
        api.put(path, {'state': 'off'})
        assert api.get(path)['state'] == 'off'
    run.step('indicators', indicators)

    def media_tls(node):
        # Ironic 39 sends neither VerifyCertificate nor a CA with its
        # InsertMedia: its operator sets them on the slot, through Redfish.
        cd = node.redfish + '/VirtualMedia/Cd'
        if node.media_tls == 'no-verify':
            answer = requests.patch(cd, json={'VerifyCertificate': False},
                                    auth=node.auth, timeout=30)
            assert answer.status_code in (200, 204), answer.text
        elif node.media_tls == 'ca':
            answer = requests.post(cd + '/Certificates', json={
                'CertificateString': lab.image_ca,
                'CertificateType': 'PEM'}, auth=node.auth, timeout=30)
            # sushy-tools answers 204 with the certificate's Location.
            assert answer.status_code in (201, 204), answer.text
            # Another gunicorn worker may answer before its watch cache
            # has the write (documented): await it, as a client would.
            harness.wait_until(
                lambda: node.get('/VirtualMedia/Cd/Certificates')[
                    'Members@odata.count'] == 1, 30, 0.2, 'one certificate')
        wanted = node.media_tls != 'no-verify'
        harness.wait_until(
            lambda: node.get('/VirtualMedia/Cd')['VerifyCertificate']
            is wanted, 30, 0.2, 'VerifyCertificate %s' % wanted)
    run.step('media TLS (Redfish)', media_tls)

    def start_deploy(node):
        info = {'boot_iso': lab.iso_url}
        if node.secure:
            info['capabilities'] = {'secure_boot': 'true'}
        api.set_node(node.ident, instance_info=info)
        api.provision(node.ident, 'active')

    def deploy(node):
        start_deploy(node)
        api.wait(node.ident, 'active', what='deploy')
        _check_active(lab, node)
    run.step('deploy', deploy)

    def firmware_update(node):
        api.provision(node.ident, 'service', disable_ramdisk=True,
                      service_steps=[{
                          'interface': 'firmware', 'step': 'update',
                          'args': {'settings': [{
                              'component': 'bios',
                              'url': lab.firmware_url}]}}])
        api.wait(node.ident, 'active', what='service: firmware update')
        assert node.bios_version != stack.FIRMWARE_VERSION
        assert _firmware(api, node) == stack.FIRMWARE_VERSION
        assert node.get()['BiosVersion'] == stack.FIRMWARE_VERSION
        _check_active(lab, node)
    run.step('service: firmware update', firmware_update)

    def rebuild(node):
        try:
            api.provision(node.ident, 'rebuild')
        except AssertionError as exc:
            if IRONIC_REBUILD_BUG not in str(exc):
                raise
            # Ironic 33-39 cannot rebuild a node without an image_source
            # (do_node_deploy: "cannot access local variable
            # 'auto_lessee'"), and a ramdisk deploy with boot_iso must
            # have none. Undeploy and deploy again: the same BMC calls.
            node.rebuild_bug = True
            api.provision(node.ident, 'deleted')
            api.wait(node.ident, 'available', what='rebuild: undeploy')
            start_deploy(node)
        api.wait(node.ident, 'active', what='rebuild')
        _check_active(lab, node)
    run.step('rebuild', rebuild)
    if any(node.rebuild_bug for node in run.nodes):
        run.rename('rebuild *', '* Ironic could not rebuild (%s); the nodes '
                   'were undeployed and deployed again' % IRONIC_REBUILD_BUG)

    def undeploy(node):
        api.provision(node.ident, 'deleted')
        api.wait(node.ident, 'available', what='undeploy')
        harness.wait_until(
            lambda: node.get()['PowerState'] == 'Off', 30, 0.5, 'Off')
        cd = node.get('/VirtualMedia/Cd')
        assert not cd['Inserted'] and not cd['Image'], cd
        if node.secure:
            assert node.get('/SecureBoot')['SecureBootEnable'] is False
    run.step('undeploy', undeploy)


def _pvc_disk(sim, name):
    """Make VM ``name``'s root disk its DataVolume's PVC, named directly."""
    path = '/apis/kubevirt.io/v1/namespaces/default/virtualmachines/' + name
    status, vm = backend.admin_request(sim, 'GET', path)
    assert status == 200, vm
    claim = vm['spec'].pop('dataVolumeTemplates')[0]['metadata']['name']
    vm['spec']['template']['spec']['volumes'] = [
        {'name': 'root', 'persistentVolumeClaim': {'claimName': claim}}]
    status, body = backend.admin_request(sim, 'PUT', path, vm)
    assert status == 200, body


def _bios_step(lab, run, name, fn):
    """A BIOS clean step that Ironic ends on the System's BootProgress.

    Without the ramdisk, Ironic reboots the node and polls the System
    until ``BootProgress.LastState`` reads ``OSBootStarted`` or
    ``OSRunning`` (logging each earlier state it sees), then checks the
    settings and resumes. Ironic's log (sushy's debug lines) shows the
    System it read in the poll that resumed: it must carry that state.
    No ramdisk boots: no media DataVolume is made.
    """
    start = len(lab.ironic.log_text())
    run.step(name, fn)
    assert not run.rows[-1][2]['create datavolumes'], run.rows[-1]
    log = lab.ironic.log_text()[start:]
    waits = collections.defaultdict(set)
    for uuid, state in BOOT_WAIT.findall(log):
        waits[uuid].add(state)
    notes = []
    for node in run.nodes:
        state = _resumed_on(log, node.ident)
        assert state in ('OSBootStarted', 'OSRunning'), (
            '%s: node-%d resumed on BootProgress %s' % (name, node.index,
                                                        state))
        notes.append('node-%d at %s' % (node.index, state) + (
            ' after %s' % '/'.join(sorted(waits[node.ident]))
            if node.ident in waits else ''))
    run.rename(name + ' +', '+ %s: Ironic resumed on BootProgress: %s' % (
        name, ', '.join(notes)))


def _resumed_on(log, uuid):
    """``LastState`` of the System read by the poll resuming ``uuid``."""
    last = {}   # request id -> LastState of its latest System read
    for line in log.splitlines():
        found = SYSTEM_READ.search(line)
        if found:
            last[found.group(1)] = found.group(2)
            continue
        found = BIOS_RESUMED.search(line)
        if found and found.group(2) == uuid:
            return last.get(found.group(1))
    return None


def _members(node, sub):
    return [requests.get(node.redfish.split('/redfish/')[0]
                         + m['@odata.id'], auth=node.auth,
                         timeout=10).json()
            for m in node.get(sub)['Members']]


#: What Ironic's redfish inspection records of a Port's LLDPReceive.
LLDP_FIELDS = {'ChassisId': 'switch_chassis_id', 'PortId': 'switch_port_id',
               'SystemName': 'switch_system_name',
               'SystemDescription': 'switch_system_description',
               'ManagementVlanId': 'switch_vlan_id'}


def _lldp(node):
    """``{port id: Ironic's parsed LLDP}`` from the System's Chassis."""
    found = {}
    for chassis in node.get()['Links']['Chassis']:
        chassis = _get(node, chassis['@odata.id'])
        adapters = _get(node, chassis['NetworkAdapters']['@odata.id'])
        for adapter in adapters['Members']:
            adapter = _get(node, adapter['@odata.id'])
            for port in _get(node, adapter['Ports']['@odata.id'])['Members']:
                port = _get(node, port['@odata.id'])
                lldp = (port.get('Ethernet') or {}).get('LLDPReceive') or {}
                parsed = {LLDP_FIELDS[k]: v for k, v in lldp.items()
                          if k in LLDP_FIELDS and v}
                if parsed:
                    found[port['Id']] = parsed
    return found


def _get(node, path):
    response = requests.get(node.redfish.split('/redfish/')[0] + path,
                            auth=node.auth, timeout=10)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def _firmware(api, node):
    """The BIOS version Ironic has cached for ``node``."""
    found = api.get('/nodes/%s/firmware' % node.ident)['firmware']
    bios = [c for c in found if c['component'] == 'bios']
    assert bios, found
    return bios[0]['current_version']


def _clean(api, node, step, args):
    api.provision(node.ident, 'clean', disable_ramdisk=True, clean_steps=[
        {'interface': 'bios', 'step': step, 'args': args}])
    api.wait(node.ident, 'manageable', what='clean ' + step)


def _check_bios(api, node, value):
    setting = api.get('/nodes/%s/bios/%s' % (node.ident, BIOS_SETTING))
    assert setting[BIOS_SETTING]['value'] == value, setting
    bios = requests.get(node.redfish.split('/redfish/')[0]
                        + node.get()['Bios']['@odata.id'], auth=node.auth,
                        timeout=10)
    assert bios.json()['Attributes'][BIOS_SETTING] == value


def _media_datavolume(sim, image):
    """The DataVolume importing ``image``."""
    store = sim.store
    found = [dv for dv in store.list(
        store.resource('cdi.kubevirt.io', 'datavolumes'), 'default')[0]
        if dv['spec'].get('source', {}).get('http', {}).get('url') == image
        and not dv['metadata'].get('deletionTimestamp')]
    assert len(found) == 1, (image, found)
    return found[0]


def _check_active(lab, node):
    # Ironic takes PoweringOn for on: the VMI may still be starting.
    harness.wait_until(lambda: node.get()['PowerState'] == 'On', 30, 0.5,
                       'On')
    system = node.get()
    assert system['Boot']['BootSourceOverrideTarget'] == 'Cd', system['Boot']
    cd = node.get('/VirtualMedia/Cd')
    assert cd['Inserted'], cd
    base = lab.https_url if node.media_tls else lab.http_url
    assert cd['Image'].startswith(base + '/redfish/'), cd['Image']
    dv = _media_datavolume(lab.sim, cd['Image'])
    # InsertMedia's image check got the ISO's size (over TLS, trusting as
    # the import does), not the default request.
    published = os.path.join(lab.http_root, 'redfish',
                             cd['Image'].rsplit('/', 1)[1])
    assert dv['spec']['storage']['resources']['requests']['storage'] == \
        media.quantity(os.path.getsize(published),
                       config.Vmedia().size_margin), dv['spec']
    if node.media_tls:
        # CDI imported it over TLS as the slot said: unverified or with
        # the CA given (a ConfigMap).
        source = dv['spec']['source']['http']
        if node.media_tls == 'no-verify':
            assert source.get('insecureSkipVerify') is True, source
        else:
            assert source.get('certConfigMap'), source
        # No client (image check, importer) rejected the certificate.
        assert not lab.tls_alerts, lab.tls_alerts
    if node.secure:
        assert node.get('/SecureBoot')['SecureBootEnable'] is True
