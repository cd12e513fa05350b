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

"""Virtual media over real HTTP: Ironic's flow, failures, bad input."""

import collections
import functools
import json

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.vmedia import conftest

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import imports
from sushy_kubevirt.kubevirt import media

CDROM = media.disk_name('Cd')
CONFLICT_MARKER = 'ActionParameterValueConflict'


def disks(vm):
    return vm['spec']['template']['spec']['domain']['devices']['disks']


def first_boot(spec):
    """The name of the device a VM template or VMI spec boots first."""
    devices = spec['domain']['devices']
    return min((d['bootOrder'], d['name'])
               for d in devices['disks'] + devices['interfaces']
               if 'bootOrder' in d)[1]


def calls_by_verb(entries):
    return dict(collections.Counter(
        '%s %s' % (e['verb'], e['resource']) for e in entries))


def test_ironic_flow(machine, images, sim, emulator):
    image = images.add('ironic-%s.iso' % machine.name)
    system = requests.get(machine.url(machine.path), timeout=30).json()
    collection = system['VirtualMedia']['@odata.id']

    # Ironic ejects whatever is there first.
    assert machine.eject().status_code == 204

    members = requests.get(machine.url(collection), timeout=30).json()
    cds = []
    for member in members['Members']:
        device = requests.get(machine.url(member['@odata.id']),
                              timeout=30).json()
        if set(device['MediaTypes']) & {'CD', 'DVD'}:
            cds.append(device)
    assert [d['Id'] for d in cds] == ['Cd']
    assert cds[0]['Inserted'] is False and cds[0]['Image'] is None

    sim.request_log.clear()
    answer = requests.post(
        machine.url(cds[0]['Actions']['#VirtualMedia.InsertMedia'][
            'target']), json={'Image': image}, timeout=30)
    assert answer.status_code == 204, answer.text
    insert_calls = calls_by_verb(harness.api_calls(sim))

    # Importing: the image shows, not inserted, a CD-ROM already attached.
    state = machine.media()
    assert state['Image'] == image
    assert state['ImageName'] == 'ironic-%s.iso' % machine.name
    assert state['Inserted'] is False
    assert state['Status']['State'] == 'Starting'
    assert state['Oem']['SushyKubevirt']['ImportPhase'] != 'Succeeded'
    assert [d['name'] for d in disks(machine.vm())] == ['root', CDROM]

    answer = machine.boot('Cd', 'Once')
    assert answer.status_code == 204, answer.text

    # Power on is refused with a retryable conflict until the import is
    # done, and the VM is not started meanwhile.
    refused = machine.reset('On')
    assert refused.status_code == 409, refused.text
    assert CONFLICT_MARKER in refused.text
    assert 'in progress' in refused.text
    assert machine.spec()['runStrategy'] == 'Halted'

    def power_on():
        answer = machine.reset('On')
        if answer.status_code == 409 and CONFLICT_MARKER in answer.text:
            return None
        return answer
    answer = harness.wait_until(power_on, 20, 0.2, 'power on accepted')
    assert answer.status_code == 204, answer.text
    assert machine.dv()['status']['phase'] == 'Succeeded'

    state = machine.media()
    assert state['Inserted'] is True
    assert state['Status'] == {'State': 'Enabled', 'Health': 'OK'}
    harness.wait_until(
        lambda: requests.get(machine.url(machine.path), timeout=30).json()[
            'PowerState'] == 'On', 20, 0.1, 'PowerState On')
    vmi = harness.vmi(sim, machine.name)
    assert {v['name']: v.get('dataVolume', {}).get('name')
            for v in vmi['spec']['volumes']}[CDROM] == machine.dv_name
    assert boot.boot_device(machine.vm()) in (boot.CD, boot.HDD)
    # That boot used the Once: the emulator restores the boot order with a
    # patch of its own, which must land before the eject's calls count.
    harness.wait_until(
        lambda: requests.get(machine.url(machine.path), timeout=30).json()[
            'Boot']['BootSourceOverrideEnabled'] == 'Disabled', 20, 0.1,
        'the one-time boot used')

    sim.request_log.clear()
    assert machine.eject().status_code == 204
    eject_log = harness.api_calls(sim)
    eject_calls = calls_by_verb(eject_log)
    assert CDROM not in [d['name'] for d in disks(machine.vm())]
    harness.wait_until(lambda: machine.dv() is None, 10, 0.02, 'DV gone')
    print('API calls per InsertMedia: %s' % json.dumps(insert_calls))
    print('API calls per EjectMedia: %s' % json.dumps(eject_calls))
    assert insert_calls.get('create datavolumes') == 1
    assert insert_calls.get('patch virtualmachines') == 1
    assert eject_calls.get('delete datavolumes') == 1
    # One patch applies. The VM controller's status writes may move the
    # VM between the cached read and the patch: each such conflict costs
    # a refused patch and a live GET, never a second change.
    patches = [e for e in eject_log if e['verb'] == 'patch']
    refused = [e for e in patches if e['status'] in (409, 422)]
    assert len(patches) - len(refused) == 1, patches
    assert eject_calls.get('get virtualmachines', 0) == len(refused)


def test_failed_import_never_starts(machine, images, sim):
    image = images.url('late-%s.iso' % machine.name)   # 404 for now
    assert machine.insert(image).status_code == 204
    # As CDI v1.66: the importer restarts, the phase never reaches Failed.
    # While a restarted importer runs, Running is True again: the failure
    # shows once it has failed again.
    dv = harness.wait_until(
        lambda: (lambda dv: imports.restarts(dv) >= 1
                 and media.import_error(dv) and dv)(machine.dv() or {}),
        40, 0.02, 'the restarted importer failed')
    assert dv['status']['phase'] in ('ImportScheduled', 'ImportInProgress')
    assert '404' in media.import_error(dv)

    state = machine.wait_media(Health='Critical')
    assert state['Image'] == image
    assert state['Inserted'] is False
    assert state['Status']['Health'] == 'Critical'
    assert state['Status']['State'] == 'UnavailableOffline'
    assert '404' in state['Oem']['SushyKubevirt']['ImportError']

    assert machine.boot('Cd').status_code == 204
    for reset_type in ('On', 'ForceRestart', 'PushPowerButton'):
        refused = machine.reset(reset_type)
        assert refused.status_code == 409, refused.text
        assert CONFLICT_MARKER not in refused.text
        assert 'failed' in refused.text and '404' in refused.text
        assert 'restarted the importer' in refused.text
    assert machine.spec()['runStrategy'] == 'Halted'
    assert harness.vmi(sim, machine.name) is None

    # The same URL can be inserted again once it exists.
    images.add('late-%s.iso' % machine.name)
    failed_uid = dv['metadata']['uid']
    assert machine.insert(image).status_code == 204
    dv = machine.wait_phase('Succeeded')
    assert dv['metadata']['uid'] != failed_uid
    machine.wait_media(Inserted=True)
    assert machine.reset('On').status_code == 204


def test_reinsert_same_url_is_a_no_op(machine, images, sim):
    image = images.add('same-%s.iso' % machine.name)
    assert machine.insert(image).status_code == 204
    uid = machine.dv()['metadata']['uid']
    sim.request_log.clear()
    assert machine.insert(image).status_code == 204
    assert conftest.writes(sim) == []
    assert machine.dv()['metadata']['uid'] == uid


def test_replace_media(machine, images):
    first = images.add('first-%s.iso' % machine.name)
    second = images.add('second-%s.iso' % machine.name)
    assert machine.insert(first).status_code == 204
    machine.wait_phase('Succeeded')
    assert machine.insert(second).status_code == 204
    state = machine.media()
    assert state['Image'] == second and state['Inserted'] is False
    dv = machine.wait_phase('Succeeded')
    assert dv['spec']['source']['http']['url'] == second
    assert machine.wait_media(Inserted=True)['Image'] == second
    assert [d['name'] for d in disks(machine.vm())].count(CDROM) == 1
    assert len(machine.datavolumes()) == 1


def test_eject_is_idempotent(machine, images, sim):
    assert machine.insert(images.add('e-%s.iso' % machine.name)) \
        .status_code == 204
    spec = machine.spec()
    assert machine.eject().status_code == 204
    sim.request_log.clear()
    assert machine.eject().status_code == 204
    assert machine.eject().status_code == 204
    # Only the DELETE of a credentials Secret a failed insert may leave.
    assert [(e['verb'], e['resource'], e['status'])
            for e in conftest.writes(sim)] == [('delete', 'secrets', 404)] * 2
    assert machine.datavolumes() == []
    after = machine.spec()
    assert CDROM not in [d['name'] for d in disks(machine.vm())]
    spec['template']['spec']['domain']['devices']['disks'] = [
        d for d in disks({'spec': spec}) if d['name'] != CDROM]
    spec['template']['spec']['volumes'] = [
        v for v in spec['template']['spec']['volumes']
        if v['name'] != CDROM]
    assert after == spec


def test_eject_resets_boot_device_from_cd(machine, images):
    assert machine.insert(images.add('b-%s.iso' % machine.name)) \
        .status_code == 204
    assert machine.boot('Cd', 'Continuous').status_code == 204
    assert boot.boot_device(machine.vm()) == boot.CD
    assert machine.eject().status_code == 204
    assert boot.boot_device(machine.vm()) == boot.HDD
    orders = [d.get('bootOrder') for d in disks(machine.vm())]
    assert orders and None not in orders


def test_eject_keeps_a_pending_one_time_cd_boot(machine, images, sim):
    # A deploy cut short: Ironic set Cd Once, then cleaned up (ejected)
    # before the VM booted. This VM usually boots from the network.
    assert machine.boot('Pxe', 'Continuous').status_code == 204
    assert machine.insert(images.add('o-%s.iso' % machine.name)) \
        .status_code == 204
    machine.wait_phase('Succeeded')
    assert machine.boot('Cd', 'Once').status_code == 204
    assert machine.eject().status_code == 204

    def boot_override(*expected):
        body = requests.get(machine.url(machine.path), timeout=30).json()
        found = (body['Boot']['BootSourceOverrideTarget'],
                 body['Boot']['BootSourceOverrideEnabled'])
        return found == expected
    # Read as one set on an empty tray; the usual order underneath.
    harness.wait_until(lambda: boot_override('Cd', 'Once'), 10, 0.05,
                       'Cd, Once after the eject')
    assert CDROM not in [d['name'] for d in disks(machine.vm())]
    assert first_boot(machine.spec()['template']['spec']) == 'default'
    # The next boot falls through to the network and ends the override.
    assert machine.reset('On').status_code == 204
    harness.wait_until(lambda: boot_override('Pxe', 'Disabled'), 20, 0.1,
                       'the one-time boot used')
    assert first_boot(harness.vmi(sim, machine.name)['spec']) == 'default'


def test_credentials_go_to_a_secret(machine, images, sim):
    image = images.add('auth-%s.iso' % machine.name)
    answer = machine.insert(image, UserName='alice', Password='s3cret',
                            TransferProtocolType='HTTP',
                            TransferMethod='Stream')
    assert answer.status_code == 204, answer.text
    dv = machine.dv()
    secret_name = dv['spec']['source']['http']['secretRef']
    secrets = sim.store.resource('', 'secrets')
    assert sim.store.get(secrets, 'default', secret_name)['data']
    state = machine.media()
    assert state['UserName'] == 'alice' and state['Password'] == '******'
    assert machine.eject().status_code == 204
    assert sim.store.try_get(secrets, 'default', secret_name) is None


BAD_INPUT = [
    ('missing Image', {}, 400, 'requires Image'),
    ('ftp scheme', {'Image': 'ftp://127.0.0.1/x.iso'}, 400,
     'http or https'),
    ('unresolvable host', {'Image': 'http://no-such-host.invalid/x.iso'},
     400, 'cannot be resolved'),
    ('user without password', {'Image': 'http://127.0.0.1/x.iso',
                               'UserName': 'u'}, 400, 'together'),
    ('writable CD', {'Image': 'http://127.0.0.1/x.iso',
                     'WriteProtected': False}, 400, 'read-only'),
    ('protocol mismatch', {'Image': 'http://127.0.0.1/x.iso',
                           'TransferProtocolType': 'HTTPS'}, 400,
     'TransferProtocolType'),
    ('unknown parameter', {'Image': 'http://127.0.0.1/x.iso',
                           'Color': 'blue'}, 400, 'Color'),
    ('Inserted not a boolean', {'Image': 'http://127.0.0.1/x.iso',
                                'Inserted': 'yes'}, 400, 'Inserted'),
]


@pytest.mark.parametrize('case,body,status,text', BAD_INPUT,
                         ids=[c[0] for c in BAD_INPUT])
def test_bad_input_changes_nothing(machine, sim, case, body, status, text):
    body = {k: v() if callable(v) else v for k, v in body.items()}
    spec = machine.spec()
    sim.request_log.clear()
    answer = requests.post(
        machine.url(machine.cd + '/Actions/VirtualMedia.InsertMedia'),
        json=body, timeout=30)
    assert answer.status_code == status, answer.text
    assert text in answer.json()['error']['message']
    assert conftest.writes(sim) == []
    assert machine.datavolumes() == []
    assert machine.spec() == spec


@pytest.mark.parametrize('data', ['{"Image": ', '[]', '"x"'])
def test_malformed_json(machine, sim, data):
    spec = machine.spec()
    sim.request_log.clear()
    answer = requests.post(
        machine.url(machine.cd + '/Actions/VirtualMedia.InsertMedia'),
        data=data, headers={'Content-Type': 'application/json'},
        timeout=30)
    assert answer.status_code == 400, answer.text
    assert conftest.writes(sim) == []
    assert machine.spec() == spec


def test_unknown_device(machine, images, sim):
    spec = machine.spec()
    sim.request_log.clear()
    for device in ('Floppy', 'Usb'):
        answer = requests.post(
            machine.url(machine.path + '/VirtualMedia/%s/Actions/'
                        'VirtualMedia.InsertMedia' % device),
            json={'Image': images.add('d.iso')}, timeout=30)
        assert answer.status_code == 404, answer.text
        assert requests.get(machine.url(
            machine.path + '/VirtualMedia/%s' % device),
            timeout=30).status_code == 404
    assert conftest.writes(sim) == []
    assert machine.spec() == spec


def test_unknown_system(emulator, images):
    answer = requests.post(
        emulator.url + '/redfish/v1/Systems/no-such-vm/VirtualMedia/Cd/'
        'Actions/VirtualMedia.InsertMedia',
        json={'Image': images.add('u.iso')}, timeout=30)
    assert answer.status_code == 404
    assert requests.get(emulator.url + '/redfish/v1/Systems/no-such-vm/'
                        'VirtualMedia/Cd', timeout=30).status_code == 404


def test_state_shared_by_name_and_uuid(machine, images):
    image = images.add('n-%s.iso' % machine.name)
    assert machine.insert(image).status_code == 204
    by_name = requests.get(
        machine.url('/redfish/v1/Systems/%s/VirtualMedia/Cd'
                    % machine.name), timeout=30).json()
    assert by_name['Image'] == image


def test_inserted_false_keeps_the_tray_empty(machine, images):
    image = images.add('noins-%s.iso' % machine.name)
    assert machine.insert(image, Inserted=False).status_code == 204
    machine.wait_phase('Succeeded')
    state = machine.media()
    assert state['Image'] == image and state['Inserted'] is False
    assert CDROM not in [d['name'] for d in disks(machine.vm())]
    assert machine.insert(image).status_code == 204
    machine.wait_phase('Succeeded')
    machine.wait_media(Inserted=True)


def test_http_boot_uri_patch_inserts_media(machine, images):
    image = images.add('httpboot-%s.iso' % machine.name)
    answer = requests.patch(machine.url(machine.path), json={'Boot': {
        'BootSourceOverrideTarget': 'UefiHttp', 'HttpBootUri': image}},
        timeout=30)
    assert answer.status_code == 204, answer.text
    assert machine.media()['Image'] == image
    assert media.attached_datavolume(machine.vm(), 'Cd') == machine.dv_name
    assert boot.boot_device(machine.vm()) == boot.CD


PATCH_BODIES = [
    ('string', '"On"', 'MalformedJSON'),
    ('number', '7', 'MalformedJSON'),
    ('list', '[]', 'MalformedJSON'),
    ('null', 'null', 'MalformedJSON'),
    ('empty', '{}', 'PropertyMissing'),
    ('read-only property', '{"Image": "http://127.0.0.1/x.iso"}',
     'PropertyUnknown'),
    ('not a boolean', '{"VerifyCertificate": "yes"}',
     'PropertyValueTypeError'),
]


@pytest.mark.parametrize('case, data, message_id', PATCH_BODIES,
                         ids=[c[0] for c in PATCH_BODIES])
def test_patch_body_is_checked(machine, sim, case, data, message_id):
    """A VirtualMedia PATCH that is not ``{"VerifyCertificate": bool}``."""
    spec = machine.spec()
    sim.request_log.clear()
    answer = requests.patch(machine.url(machine.cd), data=data, headers={
        'Content-Type': 'application/json'}, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.json()['error']['@Message.ExtendedInfo'][0][
        'MessageId'] == 'Base.1.16.' + message_id, answer.text
    assert not conftest.writes(sim) and machine.spec() == spec


def test_patch_verify_certificate(machine):
    """Kept on the VM (tests/functional/vmedia/test_https.py: its use)."""
    patch = functools.partial(requests.patch, machine.url(machine.cd),
                              timeout=30)
    assert patch(json={'VerifyCertificate': False}).status_code == 204
    assert machine.media()['VerifyCertificate'] is False
    assert patch(json={'VerifyCertificate': True}).status_code == 204
    assert machine.media()['VerifyCertificate'] is True
