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

"""DMTF Redfish Service Validator, offline, over the whole tree: 0 FAIL.

For each feature set (full, vmedia, minimum) the validator walks every
resource reachable from the service root, with one System On, one Off
(its BIOS updated: a Task) and one with media inserted, against CSDL
from ``../shared/redfish-csdl``. Every FAIL is a test failure;
doc/source/conformance.rst explains every WARN that remains.
"""

import pytest
import requests
from tests.functional.conformance import conftest
from tests.functional.conformance import validators
from tests.functional.emulator import harness
from tests.functional.events import conftest as events
from tests.functional.vmedia.conftest import images  # noqa: F401

pytestmark = pytest.mark.validator

FEATURE_SETS = ('full', 'vmedia', 'minimum')
UPDATE_SERVICE = '/redfish/v1/UpdateService'
#: Sub-resources of every System validated in the full feature set.
SUBRESOURCES = ('', '/Processors', '/Memory', '/EthernetInterfaces',
                '/SimpleStorage', '/SecureBoot', '/Bios', '/Bios/Settings',
                '/Storage', '/VirtualMedia/Cd')


sim = conftest.sim_fixture(3)


@pytest.fixture(scope='module')
def validator_ready():
    validators.require(validators.tool('rf_service_validator'),
                       'redfish-service-validator not installed (tox -e '
                       'validator)')
    validators.require((validators.CSDL_DIR / validators.CSDL_MARK).is_file(),
                       'no CSDL files at %s' % validators.CSDL_DIR)


def _ok(response):
    assert response.status_code < 300, response.text
    return response


@pytest.fixture(scope='module')
def systems(sim, images, tmp_path_factory):  # noqa: F811
    """Three Systems: On, Off, and Off with an image inserted.

    Also an event subscription (kept in Kubernetes, so every emulator of
    the module serves it).
    """
    tmp = tmp_path_factory.mktemp('prepare')
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        **events.EVENTS)
    with harness.InProcess(config) as emulator:
        url = emulator.url
        subscription = events.SUBSCRIPTIONS + '/' + events.subscribe(
            url, 'http://127.0.0.1:9/events',
            HttpHeaders=[{'X-Token': 'x'}]).json()['Id']
        paths = [m['@odata.id'] for m in requests.get(
            url + '/redfish/v1/Systems', timeout=30).json()['Members']]
        on, off, media = sorted(paths)[:3]
        _ok(requests.post(url + on + '/Actions/ComputerSystem.Reset',
                          json={'ResetType': 'On'}, timeout=30))
        cd = url + media + '/VirtualMedia/Cd'
        _ok(requests.post(cd + '/Actions/VirtualMedia.InsertMedia', json={
            'Image': images.add('validator.iso')}, timeout=30))
        harness.wait_until(
            lambda: requests.get(url + on, timeout=30).json()[
                'PowerState'] == 'On', what='System On')
        harness.wait_until(
            lambda: requests.get(cd, timeout=30).json().get('Inserted'),
            what='media inserted')
        update = _ok(requests.post(
            url + UPDATE_SERVICE + '/Actions/UpdateService.SimpleUpdate',
            json={'ImageURI': images.add('bios-1.2.3.bin'),
                  'Targets': [off]}, timeout=30))
        harness.wait_until(
            lambda: requests.get(url + update.headers['Location'],
                                 timeout=30).status_code == 200,
            what='firmware update done')
    return (on, off, media), (subscription, update.json()['@odata.id'])


@pytest.mark.parametrize('feature_set', FEATURE_SETS)
def test_service_validator_has_no_fail(validator_ready, sim, systems,
                                       feature_set, tmp_path):
    config = harness.write_config(
        tmp_path / 'emulator.conf',
        sim.write_kubeconfig(str(tmp_path / 'kc')),
        SUSHY_EMULATOR_FEATURE_SET=feature_set, **events.EVENTS)
    with harness.InProcess(config) as emulator:
        run = validators.service_validator(emulator.url, tmp_path / 'logs')
    paths, (subscription, task) = systems
    print('%s: %d FAIL, %d WARN' % (feature_set, len(run.fails),
                                    len(run.warns)))
    print(validators.report(run.warns))
    for path in paths:
        for sub in SUBRESOURCES if feature_set == 'full' else ('',):
            assert path + sub in run.validated
    if feature_set == 'full':
        for uri in ('/redfish/v1/EventService', events.SUBSCRIPTIONS,
                    subscription, UPDATE_SERVICE, UPDATE_SERVICE
                    + '/FirmwareInventory', paths[1].replace(
                        '/Systems/', '/UpdateService/FirmwareInventory/')
                    + '-BIOS', '/redfish/v1/TaskService/Tasks', task):
            assert uri in run.validated
    assert not run.fails, validators.report(run.fails)
    # Every DMTF type was found in the CSDL (else nothing was checked).
    unchecked = [w for w in run.warns if 'Unable to locate the schema' in
                 w.text and "'SushyKubevirt." not in w.text]
    assert not unchecked, validators.report(unchecked)
