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

"""Hostile query parameters, HttpBootUri values and chunked bodies.

Each is a clear 4xx that changes nothing, or the change it asks for:
never a 500, never a 2xx that did nothing.
"""

import json

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional.hostile import conftest
from tests.functional.vmedia import conftest as vmedia_conftest

from sushy_kubevirt.drivers import systems
from sushy_kubevirt.redfish import base

SYSTEMS = '/redfish/v1/Systems'
URI = 'Boot/HttpBootUri'


@pytest.fixture(scope='module')
def emulator_settings():
    return {}


@pytest.fixture(scope='module')
def victim(machines):
    """One VM for every refused request (they change nothing)."""
    return machines()


def _state(machine):
    vm = machine.vm()
    return vm['spec'], vm['metadata'].get('annotations')


def _refused(machine, tally, send, status, message_ids):
    """``send()``; assert a clear 4xx naming a message, nothing changed."""
    before = _state(machine)
    machine.sim.request_log.clear()
    answer = send()
    changed = bool(vmedia_conftest.writes(machine.sim)) or \
        _state(machine) != before
    tally.record(answer, changed)
    assert answer.status_code == status, answer.text
    assert conftest.message_id(answer) in message_ids, answer.text
    assert not changed
    return answer.json()['error']['@Message.ExtendedInfo'][0]


@pytest.mark.parametrize('name, value, message_id', [
    ('$top', '\u00b2', 'QueryParameterValueTypeError'),
    ('$skip', '\u00b9', 'QueryParameterValueTypeError'),
    ('$top', '\u0663', 'QueryParameterValueTypeError'),
    ('$skip', '1' * 5000, 'QueryParameterOutOfRange'),
    ('$expand', '*($levels=%s)' % ('1' * 5000),
     'QueryParameterValueFormatError'),
])
def test_query_numbers_in_other_digits(victim, tally, name, value,
                                       message_id):
    _refused(victim, tally, lambda: requests.get(
        victim.url(SYSTEMS), params={name: value}, timeout=30), 400,
        (message_id,))


def _patch(machine, boot):
    return lambda: requests.patch(machine.url(machine.path),
                                  json={'Boot': boot}, timeout=30)


IMAGE = 'http://127.0.0.1:9/boot.iso'
BAD_URIS = [
    ('NUL', IMAGE + '\x00'),
    ('CR/LF', IMAGE + '\r\nX-Injected: 1'),
    ('100 KB', 'http://127.0.0.1/' + 'a' * 100000),
    ('not http', 'file:///etc/passwd'),
]


@pytest.mark.parametrize('target', [None, 'UefiHttp'])
@pytest.mark.parametrize('case, uri', BAD_URIS, ids=[c for c, _ in BAD_URIS])
def test_a_malformed_http_boot_uri_is_a_format_error(victim, tally, target,
                                                     case, uri):
    boot = {'HttpBootUri': uri}
    if target:
        boot['BootSourceOverrideTarget'] = target
    info = _refused(victim, tally, _patch(victim, boot), 400,
                    ('PropertyValueFormatError',))
    assert info['RelatedProperties'] == ['/' + URI]
    assert URI in info['MessageArgs']


@pytest.mark.parametrize('boot', [
    {'HttpBootUri': IMAGE},
    {'HttpBootUri': IMAGE, 'BootSourceOverrideTarget': 'Pxe'},
    {'HttpBootUri': IMAGE, 'BootSourceOverrideMode': 'UEFI'},
])
def test_an_http_boot_uri_without_uefi_http_is_refused(victim, tally, boot):
    info = _refused(victim, tally, _patch(victim, boot), 400,
                    ('PropertyValueConflict',))
    assert info['MessageArgs'][0] == URI


def _annotation(machine):
    return (machine.vm()['metadata'].get('annotations') or {}).get(
        systems.HTTP_BOOT_URI_ANNOTATION)


def test_a_null_http_boot_uri_clears_the_recorded_one(machine, tally,
                                                      images):
    uri = images.add('hb-%s.iso' % machine.name)
    assert machine.boot_mode('UEFI').status_code == 204
    answer = _patch(machine, {'BootSourceOverrideTarget': 'UefiHttp',
                              'HttpBootUri': uri})()
    assert answer.status_code == 204, answer.text
    assert _annotation(machine) == uri
    # As sushy sends it when it sets another target.
    answer = _patch(machine, {'BootSourceOverrideTarget': 'Pxe',
                              'HttpBootUri': None})()
    tally.record(answer, True)
    assert answer.status_code == 204, answer.text
    assert _annotation(machine) is None
    harness.wait_until(lambda: requests.get(
        machine.url(machine.path), timeout=30).json()['Boot'][
            'HttpBootUri'] is None, 20, 0.05, 'HttpBootUri null')
    assert machine.eject().status_code == 204


def _chunks(body, size=64 * 1024):
    for start in range(0, len(body), size):
        yield body[start:start + size]


def _padded(body, length):
    text = json.dumps(body).encode()
    return text + b' ' * (length - len(text))


def test_a_chunked_body_over_the_limit_is_413(victim, tally):
    data = _padded({'Boot': {'BootSourceOverrideTarget': 'Pxe'}},
                   base.MAX_BODY + 1)
    _refused(victim, tally, lambda: requests.patch(
        victim.url(victim.path), data=_chunks(data), timeout=30,
        headers={'Content-Type': 'application/json'}), 413,
        ('GeneralError',))
    # The same with a Content-Length.
    _refused(victim, tally, lambda: requests.patch(
        victim.url(victim.path), data=data, timeout=30,
        headers={'Content-Type': 'application/json'}), 413,
        ('GeneralError',))


def test_a_chunked_body_at_the_limit_is_read(machine):
    data = _padded({'Boot': {'BootSourceOverrideTarget': 'Pxe'}},
                   base.MAX_BODY)
    answer = requests.patch(machine.url(machine.path), data=_chunks(data),
                            headers={'Content-Type': 'application/json'},
                            timeout=30)
    assert answer.status_code == 204, answer.text
    harness.wait_until(lambda: requests.get(
        machine.url(machine.path), timeout=30).json()['Boot'][
            'BootSourceOverrideTarget'] == 'Pxe', 20, 0.05, 'target Pxe')
