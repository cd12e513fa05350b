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

"""Hostile firmware UUIDs and aliases, over real HTTP.

Whoever may edit the VMs of a served namespace may write anything into
``domain.firmware.uuid``: a path, CR/LF, a right-to-left override, a
slash, 3,000 characters. Such a System is served under its
``<namespace>.<name>`` id: every listed ``@odata.id`` is one path
segment, every redirect stays on the VM it names, and sushy reads every
member. Sub-resources reached by an alias redirect to the same
sub-resource under the canonical id.
"""

import re
from urllib import parse as urlparse

from kubernetes import client
from kubernetes import config as kubeconfig
import pytest
import requests
import sushy
from tests import backend
from tests.functional.emulator import harness

SYSTEMS = '/redfish/v1/Systems/'
MANAGERS = '/redfish/v1/Managers/'
#: One path segment of unreserved characters, never a dot segment.
SEGMENT = re.compile(r'[A-Za-z0-9][A-Za-z0-9._~-]*')
HOSTILE = {
    'dot segments': '../Systems/{victim}',
    'CR/LF': 'a\r\nb',
    'right-to-left override': 'x\u202eevil',
    'slash': 'a/b',
    '3,000 characters': 'z' * 3000,
}


@pytest.fixture(scope='module')
def emulator_settings():
    return {}


@pytest.fixture(scope='module')
def edit(sim, tmp_path_factory):
    """``edit(name, path, value)``: a JSON patch of a VM, as its editor."""
    path = backend.write_admin_kubeconfig(
        sim, str(tmp_path_factory.mktemp('admin') / 'kubeconfig'))
    api = kubeconfig.new_client_from_config(config_file=path)
    custom = client.CustomObjectsApi(api)
    try:
        yield lambda name, path, value: \
            custom.patch_namespaced_custom_object(
                'kubevirt.io', 'v1', 'default', 'virtualmachines', name,
                [{'op': 'replace', 'path': '/spec/template/spec/domain/'
                  + path, 'value': value}],
                _content_type='application/json-patch+json')
    finally:
        api.close()


@pytest.fixture(scope='module')
def edited(machines, edit):
    """``(victim, {case: machine})``: VMs given the hostile UUIDs."""
    victim = machines()
    cases = {}
    for case, value in HOSTILE.items():
        machine = machines()
        edit(machine.name, 'firmware/uuid', value.format(victim=victim.uuid))
        cases[case] = machine

    def seen():
        # The watch cache has each edit: the name no longer leads to the
        # UUID the VM had.
        return not any(requests.get(
            victim.base + SYSTEMS + m.name, allow_redirects=False,
            timeout=30).headers.get('Location', m.uuid).endswith(m.uuid)
            for m in cases.values())
    harness.wait_until(seen, 20, 0.05, 'the edits seen')
    return victim, cases


def _ids(base):
    members = requests.get(base + SYSTEMS.rstrip('/'),
                           timeout=30).json()['Members']
    return [m['@odata.id'][len(SYSTEMS):] for m in members]


def test_every_listed_id_is_one_path_segment(edited):
    victim, cases = edited
    ids = _ids(victim.base)
    assert [i for i in ids if not SEGMENT.fullmatch(i)] == []
    assert victim.uuid in ids
    assert ids.count(victim.uuid) == 1


@pytest.mark.parametrize('case', HOSTILE)
def test_the_name_redirects_to_the_alias(edited, case):
    victim, cases = edited
    machine = cases[case]
    alias = 'default.' + machine.name
    moved = requests.get(victim.base + SYSTEMS + machine.name,
                         allow_redirects=False, timeout=30)
    assert moved.status_code == 307, moved.text
    location = moved.headers['Location']
    assert location.endswith(SYSTEMS + alias), location
    assert '..' not in location and '%' not in location
    system = requests.get(victim.base + SYSTEMS + alias, timeout=30).json()
    assert (system['Id'], system['Name'], system['UUID']) == (
        alias, machine.name, None)
    manager = requests.get(victim.base + MANAGERS + alias, timeout=30)
    assert manager.status_code == 200, manager.text
    assert (manager.json()['Id'], manager.json()['UUID']) == (alias, None)


@pytest.mark.parametrize('case', HOSTILE)
def test_the_hostile_value_names_nothing(edited, case):
    victim, cases = edited
    value = urlparse.quote(HOSTILE[case].format(victim=victim.uuid),
                           safe='/')
    answer = requests.get(victim.base + SYSTEMS + value,
                          allow_redirects=False, timeout=30)
    if case == 'dot segments':
        # requests resolves the dot segments: that is the victim itself.
        assert answer.status_code == 200
        assert answer.json()['Id'] == victim.uuid
    else:
        assert answer.status_code == 404, answer.text


def test_sushy_reads_every_member(edited):
    victim, cases = edited
    conn = sushy.Sushy(victim.base + '/redfish/v1/', auth=harness.NoAuth(),
                       server_side_retries=0)
    systems = conn.get_system_collection()
    names = {}
    for member in systems.get_members():
        names[member.identity] = member.name
    assert {names['default.' + m.name] for m in cases.values()} == {
        m.name for m in cases.values()}
    assert names[victim.uuid] == victim.name


def test_a_mac_that_is_no_mac_is_no_interface(machine, edit):
    nics = machine.path + '/EthernetInterfaces'
    before = requests.get(machine.url(nics), timeout=30).json()['Members']
    assert len(before) == 1
    edit(machine.name, 'devices/interfaces/0/macAddress', '../../Bios')
    harness.wait_until(lambda: requests.get(
        machine.url(nics), timeout=30).json()['Members'] != before, 20,
        0.05, 'the edit seen')
    assert requests.get(machine.url(nics),
                        timeout=30).json()['Members'] == []


def _first(base, path):
    members = requests.get(base + path, timeout=30).json()['Members']
    return members[0]['@odata.id']


def _sub_resources(base, uuid):
    """Paths under System ``uuid`` (and its Manager), one of each kind."""
    system = SYSTEMS + uuid
    storage = _first(base, system + '/Storage')
    drives = requests.get(base + storage, timeout=30).json()['Drives']
    return [
        system + '/Processors', _first(base, system + '/Processors'),
        _first(base, system + '/EthernetInterfaces'),
        system + '/Memory/GuestMemory', storage, drives[0]['@odata.id'],
        _first(base, storage + '/Volumes'),
        _first(base, system + '/SimpleStorage'), system + '/Bios',
        system + '/Bios/Settings', system + '/SecureBoot', MANAGERS + uuid,
    ]


@pytest.mark.parametrize('alias', ['name', 'namespace.name'])
def test_sub_resources_by_alias_redirect_to_the_canonical_id(
        machine, alias):
    ident = machine.name if alias == 'name' else 'default.' + machine.name
    for path in _sub_resources(machine.base, machine.uuid):
        aliased = path.replace(machine.uuid, ident)
        moved = requests.get(machine.base + aliased, allow_redirects=False,
                             timeout=30)
        assert moved.status_code == 307, (aliased, moved.text)
        assert moved.headers['Location'].endswith(path), aliased
        assert requests.get(machine.base + aliased,
                            timeout=30).status_code == 200, aliased
