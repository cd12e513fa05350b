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

"""ETags of a System and its sub-resources; If-Match and If-None-Match."""

import requests
from tests.functional.emulator import harness

SUBRESOURCES = ('', '/Processors', '/Memory', '/EthernetInterfaces',
                '/SimpleStorage', '/SecureBoot', '/BIOS', '/VirtualMedia',
                '/VirtualMedia/Cd')


def _etag(url):
    response = requests.get(url, timeout=30)
    assert response.status_code == 200, response.text
    return response.headers['ETag']


def test_every_get_of_a_system_carries_its_etag(emulator, machine):
    url = emulator.url + machine.path
    tags = {sub: _etag(url + sub) for sub in SUBRESOURCES}
    assert len(set(tags.values())) == 1, tags
    tag = tags['']
    assert tag.startswith('"') and tag.endswith('"')
    response = requests.get(url, headers={'If-None-Match': tag}, timeout=30)
    assert response.status_code == 304 and not response.content
    response = requests.get(url, headers={'If-None-Match': '"other"'},
                            timeout=30)
    assert response.status_code == 200


def test_if_match_guards_writes(sim, emulator, machine):
    url = emulator.url + machine.path
    tag = _etag(url)
    before = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    for method, path, body in (
            ('PATCH', '', {'Boot': {'BootSourceOverrideTarget': 'Pxe'}}),
            ('POST', '/Actions/ComputerSystem.Reset', {'ResetType': 'On'}),
            ('PATCH', '/SecureBoot', {'SecureBootEnable': False})):
        response = requests.request(method, url + path, json=body,
                                    headers={'If-Match': '"stale"'},
                                    timeout=30)
        assert response.status_code == 412, response.text
        error = response.json()['error']
        assert error['code'].endswith('.PreconditionFailed')
        assert response.headers['ETag'] == tag
    assert harness.vm(sim, machine.name)['metadata']['resourceVersion'] \
        == before

    response = requests.patch(url, json={'Boot': {
        'BootSourceOverrideTarget': 'Pxe'}}, headers={'If-Match': tag},
        timeout=30)
    assert response.status_code == 204, response.text
    changed = _etag(url)
    assert changed != tag   # the VM changed, so did its ETag
    response = requests.patch(url, json={'Boot': {
        'BootSourceOverrideTarget': 'Hdd'}}, headers={'If-Match': tag},
        timeout=30)
    assert response.status_code == 412   # the old one no longer matches
