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

"""The vmedia driver reads an action's parameters from the request object.

sushy-tools' view passes InsertMedia's Image, Inserted, WriteProtected
and credentials only; the driver checks every parameter, from the
request object, here outside any Flask request. Each case is refused
before the driver reads or writes anything.
"""

import logging

import pytest
from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import vmedia
from sushy_kubevirt.kubevirt import tray

IMAGE = 'http://images.example/boot.iso'


class Systems:
    """A systems driver that must not be asked: the refusals come first."""

    def find_vm(self, ident):
        raise AssertionError('the VM was looked up')

    @property
    def cluster(self):
        raise AssertionError('the cluster was used')


@pytest.fixture
def driver():
    driver = vmedia.KubeVirtVmediaDriver({}, logging.getLogger(__name__),
                                         Systems())
    yield driver
    driver._checks.shutdown()


def _insert(driver, parameters, image=IMAGE):
    request = context.Request(action=tray.INSERT, parameters=parameters)
    with context.bound(request), pytest.raises(error.FishyError) as exc:
        driver.insert_image('node-0', 'Cd', image, True, True)
    return exc.value


@pytest.mark.parametrize('name, value, message_id', [
    ('TransferProtocolType', 'HTTPS', 'ActionParameterValueConflict'),
    ('VerifyCertificate', 'no', 'ActionParameterValueTypeError'),
])
def test_insert_checks_parameters_the_view_does_not_pass(driver, name, value,
                                                         message_id):
    refused = _insert(driver, {'Image': IMAGE, name: value})
    assert (refused.code, refused.message_id) == (400, message_id)
    assert name in str(refused)


@pytest.mark.parametrize('parameters, message_id', [
    ({'Image': IMAGE, 'TransferMethod': 'Upload'},
     'ActionParameterValueNotInList'),
    ({'Image': IMAGE, 'Bogus': 1}, 'ActionParameterUnknown'),
    ({'Image': IMAGE, 'UserName': 'u'}, 'ActionParameterMissing'),
])
def test_insert_refuses_bad_parameters(driver, parameters, message_id):
    refused = _insert(driver, parameters)
    assert (refused.code, refused.message_id) == (400, message_id)


def test_outside_the_action_the_argument_is_the_image(driver):
    """Not InsertMedia (the System PATCH of HttpBootUri inserts too)."""
    with pytest.raises(error.FishyError) as exc:
        driver.insert_image('node-0', 'Cd', 'ftp://images.example/a.iso')
    assert exc.value.code == 400
    assert vmedia.HTTP_BOOT_URI in str(exc.value)


def test_eject_takes_no_parameter(driver):
    request = context.Request(action=tray.EJECT, parameters={'Image': ''})
    with context.bound(request), pytest.raises(error.FishyError) as exc:
        driver.eject_image('node-0', 'Cd')
    assert (exc.value.code, exc.value.message_id) == (
        400, 'ActionParameterUnknown')
