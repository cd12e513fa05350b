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

"""A System's GET is rendered once per ETag, and again when it changes."""

from kubernetes import client
from kubernetes import config as kube_config
import requests
from tests import backend
from tests.functional.emulator import harness


class _Headers(dict):
    """The answer's headers but Date, in the order they came."""

    def __init__(self, raw):
        self.order = [(k, v) for k, v in raw.items() if k != 'Date']
        super().__init__(self.order)

    def __eq__(self, other):
        return self.order == other.order


def _answer(url, **headers):
    response = requests.get(url, headers=headers, timeout=30)
    return (response.status_code, _Headers(response.raw.headers),
            response.content)


def test_the_kept_answer_is_the_rendered_one(sim, emulator, machine):
    url = emulator.url + machine.path
    harness.wait_caught_up(sim, url, machine.name)
    first = _answer(url)
    assert first[0] == 200 and first[1]['ETag'] == harness.etag(
        sim, machine.name)
    # The same bytes, and the same headers in the same order, from the
    # kept answer (served before Flask: no credentials here).
    assert all(_answer(url) == first for _ in range(3))
    assert _answer(url, **{'OData-Version': '4.0'}) == first
    # A query, a conditional GET or another OData-Version is answered as
    # it always was.
    assert _answer(url + '?$select=Name')[2] != first[2]
    status, headers, body = _answer(url, **{'If-None-Match':
                                            first[1]['ETag']})
    assert (status, body, 'Link' in headers) == (304, b'', False)
    assert _answer(url, **{'OData-Version': '4.1'})[0] == 412
    head = requests.head(url, timeout=30)
    assert (head.status_code, head.headers['ETag']) == (200, first[1]['ETag'])


def test_a_change_is_rendered_again(sim, emulator, machine):
    url = emulator.url + machine.path
    for led in ('Blinking', 'Off'):
        response = requests.patch(url, json={'IndicatorLED': led},
                                  timeout=30)
        assert response.status_code in (200, 204), response.text
        shown = harness.wait_caught_up(sim, url, machine.name)
        assert shown.json()['IndicatorLED'] == led
        assert _answer(url)[2] == shown.content


def test_a_change_of_the_vmi_alone_is_rendered_again(
        sim, emulator, machine, tmp_path):
    url = emulator.url + machine.path
    if harness.vmi(sim, machine.name) is None:
        response = requests.post(url + '/Actions/ComputerSystem.Reset',
                                 json={'ResetType': 'On'}, timeout=30)
        assert response.status_code == 204, response.text
    # Running, and its VM's status written: no controller writes follow
    # that would change the ETag again behind the test's back.
    harness.wait_until(
        lambda: (harness.vmi(sim, machine.name) or {}).get(
            'status', {}).get('phase') == 'Running' and harness.vm(
            sim, machine.name).get('status', {}).get(
            'printableStatus') == 'Running', what='a running VMI')
    before = harness.wait_caught_up(sim, url, machine.name)
    assert all(_answer(url)[2] == before.content for _ in range(3))
    api = kube_config.new_client_from_config(
        config_file=backend.write_admin_kubeconfig(
            sim, str(tmp_path / 'kubeconfig')))
    version = harness.vm(sim, machine.name)['metadata']['resourceVersion']
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        'kubevirt.io', 'v1', 'default', 'virtualmachineinstances',
        machine.name, {'metadata': {'labels': {'changed': 'yes'}}})
    after = harness.wait_caught_up(sim, url, machine.name)
    assert harness.vm(sim, machine.name)['metadata'][
        'resourceVersion'] == version   # the VM did not change
    assert after.headers['ETag'] != before.headers['ETag']
    assert _answer(url)[1]['ETag'] == after.headers['ETag']
