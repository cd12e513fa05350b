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

"""DMTF Redfish Service Validator, offline, against ours and the fake.

Both services are validated in the same run with the CSDL files from
``../shared/redfish-csdl``; every FAIL of ours must also be a FAIL of
sushy-tools' own ``--fake`` driver, or one of the few sushy-tools
template defects listed in ``UPSTREAM`` that only show on resources the
fake driver does not have. doc/source/conformance.rst lists what is left.
"""

import re

import pytest
import requests
from tests.functional.conformance import conftest
from tests.functional.conformance import validators
from tests.functional.emulator import harness
from tests.functional.events import conftest as events

pytestmark = [
    pytest.mark.validator,
    pytest.mark.skipif(validators.tool('rf_service_validator') is None,
                       reason='redfish-service-validator not installed '
                              '(tox -e validator)'),
    pytest.mark.skipif(not validators.CSDL_DIR.is_dir(),
                       reason='no CSDL files at %s' % validators.CSDL_DIR),
]

#: sushy-tools template defects on resources the fake driver lacks
#: (it has no Processor members and no BIOS); the libvirt driver shows
#: them too. (uri pattern, property pattern, kind).
UPSTREAM = (
    # Every template carries the mockup-only copyright annotation.
    (r'.*', r'/@Redfish\.Copyright', 'Copyright Annotation Error'),
)


def upstream(key):
    uri, prop, kind = key
    return any(re.fullmatch(u, uri) and re.fullmatch(p, prop) and k == kind
               for u, p, k in UPSTREAM)


@pytest.fixture(scope='module')
def sim():
    running = conftest.simulator(2)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope='module')
def config_file(sim, tmp_path_factory):
    """The emulator's config, with the EventService on."""
    tmp = tmp_path_factory.mktemp('emulator')
    kubeconfig = sim.write_kubeconfig(str(tmp / 'kubeconfig'))
    return harness.write_config(tmp / 'emulator.conf', kubeconfig,
                                **events.EVENTS)


def _ok(response):
    assert response.status_code < 300, response.text
    return response


def _uefi_secure_running(sim, emulator, machine):
    url = emulator.url + machine.path
    _ok(requests.patch(url, json={'Boot': {
        'BootSourceOverrideMode': 'UEFI'}}, timeout=30))
    _ok(requests.patch(url + '/SecureBoot', json={
        'SecureBootEnable': True}, timeout=30))
    _ok(requests.post(url + '/Actions/ComputerSystem.Reset',
                      json={'ResetType': 'On'}, timeout=30))
    harness.wait_until(
        lambda: (harness.vmi(sim, machine.name) or {}).get(
            'status', {}).get('phase') == 'Running', what='VMI Running')


def test_no_fail_the_fake_driver_does_not_have(sim, emulator, fake,
                                               machines, tmp_path):
    legacy, uefi = machines(), machines()
    _uefi_secure_running(sim, emulator, uefi)
    sub_id = events.subscribe(emulator.url, 'http://127.0.0.1:9/events',
                              HttpHeaders=[{'X-Token': 'x'}]).json()['Id']
    _, fake_fails = validators.service_validator(
        fake.url, tmp_path / 'fake-logs')
    validated, ours = validators.service_validator(
        emulator.url, tmp_path / 'ours-logs')

    for machine in (legacy, uefi):
        for sub in ('', '/Processors', '/EthernetInterfaces',
                    '/SimpleStorage', '/SecureBoot', '/Bios',
                    '/Bios/Settings', '/Storage', '/Storage/virtio'):
            assert machine.path + sub in validated
    for uri in ('/redfish/v1/EventService', events.SUBSCRIPTIONS,
                events.SUBSCRIPTIONS + '/' + sub_id):
        assert uri in validated
    assert fake_fails, 'no FAIL parsed from the fake run'
    extra = [f for f in validators.not_in(ours, fake_fails)
             if not upstream(validators.key(f))]
    assert not extra, validators.report(extra)
