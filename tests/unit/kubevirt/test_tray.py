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

"""Unit tests for sushy_kubevirt.kubevirt.tray (the virtual-media policy)."""

import pytest
from tests.unit.kubevirt import fixtures as fx

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import tray

URL = 'http://10.0.0.1/boot.iso'


def _refused(body):
    with pytest.raises(imageurl.Invalid) as exc:
        tray.insert_request(body)
    return exc.value.message_id, exc.value.message_args


def test_defaults():
    request = tray.insert_request({'Image': URL})
    assert request == tray.Insert(imageurl.parse(URL), True, None, None,
                                  'Image', tray.INSERT)


def test_credentials_from_parameters_or_userinfo():
    given = tray.insert_request({'Image': URL, 'UserName': 'u',
                                 'Password': 'p'})
    assert (given.username, given.password) == ('u', 'p')
    inline = tray.insert_request({'Image': 'http://a%3Ab:c@10.0.0.1/x'})
    assert (inline.username, inline.password) == ('a:b', 'c')
    assert inline.url.url == 'http://10.0.0.1/x'


def test_empty_credentials_are_none():
    request = tray.insert_request({'Image': URL, 'UserName': '',
                                   'Password': ''})
    assert request.username is None and request.password is None


@pytest.mark.parametrize('body,message_id,args', [
    ([], 'MalformedJSON', []),
    ({'Image': URL, 'b': 1, 'a': 2}, 'ActionParameterUnknown',
     [tray.INSERT, 'a']),
    ({}, 'ActionParameterMissing', [tray.INSERT, 'Image']),
    ({'Image': URL, 'UserName': 'u'}, 'ActionParameterMissing',
     [tray.INSERT, 'Password']),
    ({'Image': URL, 'Inserted': 1}, 'ActionParameterValueTypeError',
     ['1', 'Inserted', tray.INSERT]),
    ({'Image': URL, 'TransferProtocolType': 'HTTPS'},
     'ActionParameterValueConflict', ['TransferProtocolType', 'HTTPS']),
    ({'Image': URL, 'TransferMethod': 'Upload'},
     'ActionParameterValueNotInList',
     ['Upload', 'TransferMethod', tray.INSERT]),
])
def test_refusals(body, message_id, args):
    assert _refused(body) == (message_id, args)


def test_eject_takes_no_parameter():
    tray.eject_request(None)
    tray.eject_request({})
    with pytest.raises(imageurl.Invalid) as exc:
        tray.eject_request({'Image': URL})
    assert exc.value.message_id == 'ActionParameterUnknown'


def _dv(url=URL, phase='Succeeded', annotations=None):
    return {'metadata': {'name': 'vm-vmedia-cd',
                         'annotations': annotations or {}},
            'spec': {'source': {'http': {'url': url}}},
            'status': {'phase': phase}}


def test_reuse():
    assert tray.reusable(_dv(), URL, True, False)
    assert not tray.reusable(_dv(), URL, True, True)
    assert not tray.reusable(_dv(phase='Failed'), URL, True, False)
    assert not tray.reusable(_dv(url=URL + '2'), URL, True, False)
    assert not tray.reusable(_dv(), URL, False, False)
    assert not tray.reusable(
        _dv(annotations={media.ANNOTATION_USERNAME: ''}), URL, True, False)
    assert not tray.reusable(None, URL, True, False)


def test_reuse_needs_the_same_trust():
    https = 'https://10.0.0.1/a.iso'
    dv = _dv(url=https)
    assert tray.reusable(dv, https, True, False, (None, False))
    assert not tray.reusable(dv, https, True, False, (None, True))
    assert not tray.reusable(dv, https, True, False, ('ca', False))
    dv['spec']['source']['http']['certConfigMap'] = 'ca'
    assert tray.reusable(dv, https, True, False, ('ca', False))
    assert not tray.reusable(dv, https, True, False)


def test_verify_certificate_parameter():
    assert tray.insert_request({'Image': URL}).verify is None
    assert tray.insert_request(
        {'Image': URL, 'VerifyCertificate': False}).verify is False
    with pytest.raises(imageurl.Invalid):
        tray.insert_request({'Image': URL, 'VerifyCertificate': 'no'})


def _status(phase, reason=None, restarts=0):
    dv = _dv(phase=phase)
    dv['status']['restartCount'] = restarts
    if reason:
        dv['status']['conditions'] = [{
            'type': 'Running', 'status': 'False', 'reason': reason,
            'message': 'Unable to connect to http data source: 404'}]
    vm = {'spec': {'template': {'spec': {
        'domain': {'devices': {'disks': [
            {'name': 'sushy-vmedia-cd', 'cdrom': {}}]}},
        'volumes': [{'name': 'sushy-vmedia-cd',
                     'dataVolume': {'name': 'vm-vmedia-cd'}}]}}}}
    return tray.device_status(dv, media.media_state(vm, dv))['Status']


@pytest.mark.parametrize('phase, reason, restarts, state, health', [
    ('Succeeded', None, 0, 'Enabled', 'OK'),
    ('ImportInProgress', None, 0, 'Starting', 'OK'),
    ('ImportInProgress', 'Error', 0, 'Starting', 'Warning'),
    # CDI restarted the failing importer: failed, the phase unchanged.
    ('ImportInProgress', 'Error', 1, 'UnavailableOffline', 'Critical'),
    ('ImportScheduled', 'Error', 5, 'UnavailableOffline', 'Critical'),
    ('ImportInProgress', None, 2, 'Starting', 'OK'),
    ('Failed', None, 0, 'UnavailableOffline', 'Critical'),
    ('Failed', 'Error', 0, 'UnavailableOffline', 'Critical'),
])
def test_status_of_an_import(phase, reason, restarts, state, health):
    status = _status(phase, reason, restarts)
    assert (status['State'], status['Health']) == (state, health)
    if health == 'OK':
        assert 'Conditions' not in status
    else:
        [condition] = status['Conditions']
        assert condition['Severity'] == health


def _blocker(phase, restarts):
    dv = _dv(phase=phase)
    dv['status'].update(restartCount=restarts, conditions=[{
        'type': 'Running', 'status': 'False', 'reason': 'Error',
        'message': 'Unable to connect to http data source: expected '
                   'status code 200, got 404. Status: 404 Not Found'}])
    vm = _apply(fx.vm(disks=[fx.disk('root', 1)]),
                tray.attach_ops(fx.vm(disks=[fx.disk('root', 1)]), 'Cd',
                                'vm-vmedia-cd'))
    return tray.power_on_blocker(vm, dv, 'Cd')


def test_power_on_refused_for_good_once_the_importer_restarted():
    retryable, message = _blocker('ImportInProgress', 2)
    assert not retryable
    assert 'failed (CDI restarted the importer 2 times)' in message
    assert 'got 404' in message and URL in message
    assert 'restarted the importer 1 time)' in _blocker('ImportScheduled',
                                                        1)[1]
    # The first attempt's error alone: still importing, retryable.
    retryable, message = _blocker('ImportInProgress', 0)
    assert retryable and 'last error' in message and 'got 404' in message


def test_a_failing_import_is_not_reused():
    dv = _dv(phase='ImportInProgress')
    assert tray.reusable(dv, URL, True, False)
    dv['status'].update(restartCount=1, conditions=[{
        'type': 'Running', 'status': 'False', 'reason': 'Error'}])
    assert not tray.reusable(dv, URL, True, False)


def test_status_of_an_empty_tray():
    assert tray.device_status(None, media.EMPTY)['Status'] == {
        'State': 'Enabled', 'Health': 'OK'}


def test_credentials_shown():
    state = media.EMPTY._replace(image=URL)
    assert tray.credentials_shown(_dv(), state) == ('', '')
    assert tray.credentials_shown(_dv(annotations={
        media.ANNOTATION_USERNAME: 'u'}), state) == ('u', tray.MASKED)
    assert tray.credentials_shown(_dv(annotations={
        media.ANNOTATION_USERNAME: ''}), state) == ('', tray.MASKED)


def _apply(vm, ops):
    return jsonpatch.apply(vm, ops)


def _inserted(*disks):
    """A VM booting from the network, then its disk; the tray attached."""
    vm = fx.vm(disks=[fx.disk('root', 2)] + list(disks),
               interfaces=[fx.nic('prov', 1)])
    return _apply(vm, tray.attach_ops(vm, 'Cd', 'dv'))


def _booted(vm, uid='vmi-2'):
    return _apply(vm, boot.restore_once_ops(vm, fx.vmi(uid=uid)))


def test_eject_keeps_a_pending_one_time_cd_boot_falling_through():
    vm = _inserted()
    once = _apply(vm, boot.boot_once_ops(vm, 'Cd', 'vmi-1'))
    assert boot.boot_device(once) == 'Cd'
    ejected = _apply(once, tray.eject_ops(once, 'Cd'))
    assert media.disk_name('Cd') not in fx.orders(ejected)
    # Read as set on an empty tray: Cd, Once; the usual order underneath.
    assert (boot.boot_device(ejected), boot.override_enabled(ejected)) == \
        ('Cd', 'Once')
    assert fx.orders(ejected) == {'disks/root': 2, 'interfaces/prov': 1}
    # That boot falls through to the network and ends the override.
    booted = _booted(ejected)
    assert (boot.boot_device(booted), boot.override_enabled(booted)) == \
        ('Pxe', 'Disabled')
    # Media inserted before that boot is booted first.
    again = _apply(ejected, tray.attach_ops(ejected, 'Cd', 'dv2'))
    assert (boot.boot_device(again), boot.override_enabled(again)) == \
        ('Cd', 'Once')
    assert fx.orders(_booted(again)) == fx.orders(_inserted())


def test_eject_makes_a_continuous_cd_boot_hdd():
    vm = _inserted()
    cd = _apply(vm, boot.continuous_ops(vm, 'Cd'))
    ejected = _apply(cd, tray.eject_ops(cd, 'Cd'))
    assert (boot.boot_device(ejected), boot.override_enabled(ejected)) == \
        ('Hdd', 'Continuous')


def test_eject_leaves_a_one_time_boot_of_another_cdrom():
    vm = _inserted(fx.disk('seed', 3, kind='cdrom'))
    once = _apply(vm, boot.boot_once_ops(vm, 'Cd', 'vmi-1'))
    ejected = _apply(once, tray.eject_ops(once, 'Cd'))
    assert fx.orders(ejected)['disks/seed'] == min(
        v for v in fx.orders(ejected).values() if v)
    assert boot.override_enabled(ejected) == 'Once'
    assert fx.orders(_booted(ejected)) == {
        'disks/root': 2, 'disks/seed': 3, 'interfaces/prov': 1}


def test_eject_leaves_another_override_alone():
    vm = _inserted()
    once = _apply(vm, boot.boot_once_ops(vm, 'Hdd', 'vmi-1'))
    assert tray.eject_ops(once, 'Cd') == media.detach_ops(once, 'Cd')
