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

"""Concurrent boot, boot-mode and power requests on one VM."""

import concurrent.futures

import requests
from tests.functional.emulator import harness


def test_twenty_concurrent_writes_end_consistent(sim, emulator, machine):
    url = emulator.url + machine.path
    reset = url + '/Actions/ComputerSystem.Reset'
    requests_ = []
    for i in range(20):
        kind = i % 4
        if kind == 0:
            requests_.append(('PATCH', url, {'Boot': {
                'BootSourceOverrideTarget': ('Pxe', 'Hdd')[i % 8 // 4]}}))
        elif kind == 1:
            requests_.append(('PATCH', url, {'Boot': {
                'BootSourceOverrideMode': ('UEFI', 'Legacy')[i % 8 // 4]}}))
        elif kind == 2:
            requests_.append(('PATCH', url, {'Boot': {
                'BootSourceOverrideTarget': ('Hdd', 'Pxe')[i % 8 // 4],
                'BootSourceOverrideEnabled': 'Once'}}))
        else:
            requests_.append(('POST', reset, {
                'ResetType': ('On', 'ForceOff')[i % 8 // 4]}))
    sim.request_log.clear()
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(
            lambda r: requests.request(r[0], r[1], json=r[2], timeout=60),
            requests_))
    for (method, _, body), answer in zip(requests_, answers):
        # A power action may meet a transition in progress (409).
        allowed = (204, 409) if method == 'POST' else (204,)
        assert answer.status_code in allowed, (body, answer.text)

    stored = harness.vm(sim, machine.name)
    devices = stored['spec']['template']['spec']['domain']['devices']
    orders = [d.get('bootOrder') for d in
              devices['disks'] + devices['interfaces']]
    assert [d['name'] for d in devices['disks']] == ['root']
    assert [d['name'] for d in devices['interfaces']] == ['default']
    assert sorted(orders) == [1, 2]
    bootloader = stored['spec']['template']['spec']['domain']['firmware'][
        'bootloader']
    assert list(bootloader) in (['efi'], ['bios'])
    # Racing guarded patches conflicted and were rebuilt, not forced.
    statuses = [p['status'] for p in harness.api_calls(sim, method='PATCH')]
    assert 200 in statuses and set(statuses) <= {200, 422}
