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

"""CRD schemas over HTTP: validation, pruning, fieldValidation, managers.

Expected messages are kube-apiserver's (apiextensions-apiserver's
kubeOpenAPIResultToFieldErrors over kube-openapi's validators, the
patch handler's strict decoding errors), written out by hand.
"""

import json

from kubernetes import client
from kubernetes import config
import pytest
from tests.functional.simulator import apitools
from tests.functional.simulator import vmtools

from sushy_kubevirt.simulator import objects
from sushy_kubevirt.simulator import Simulator

DV_G, DV_V, DVS = 'cdi.kubevirt.io', 'v1beta1', 'datavolumes'
JSON_PATCH = 'application/json-patch+json'
MERGE_PATCH = 'application/merge-patch+json'
VM_PATH = '/apis/kubevirt.io/v1/namespaces/default/virtualmachines'


@pytest.fixture
def simulator(tmp_path):
    sim = Simulator(crd_schemas=apitools.crd_schema_dir(), time_scale=100,
                    stage_delays=vmtools.TINY, **apitools.DEFAULTS)
    with sim:
        yield sim


@pytest.fixture
def api(simulator, tmp_path):
    path = simulator.write_kubeconfig(str(tmp_path / 'kubeconfig'))
    api_client = config.new_client_from_config(config_file=path)
    api_client.user_agent = 'schema-test/1.0 (linux)'
    try:
        yield api_client
    finally:
        api_client.close()


def request(api, method, path, body=None, ctype='application/json',
            **query):
    status, headers, data = apitools.raw(api, method, path, body=body,
                                         headers={'Content-Type': ctype},
                                         query=query)
    return status, headers, json.loads(data) if data else None


def warnings(headers):
    return [v for k, v in headers.items() if k.lower() == 'warning'] \
        if isinstance(headers, dict) else headers.getlist('Warning')


def vm_body(name, **changes):
    vm = objects.make_vm(name)
    domain = vm['spec']['template']['spec']['domain']
    for key, value in changes.items():
        domain[key] = value
    return vm


def test_mistyped_field_is_422_in_kube_apiserver_words(api):
    body = vm_body('typed')
    body['spec']['template']['spec']['domain']['cpu']['cores'] = '4'
    status, _headers, answer = request(api, 'POST', VM_PATH, body)
    assert status == 422
    field = 'spec.template.spec.domain.cpu.cores'
    detail = ('Invalid value: "string": %s in body must be of type '
              'integer: "string"' % field)
    assert answer['reason'] == 'Invalid'
    # The VM schema has CEL rules: kube says they were skipped.
    skipped = ('Invalid value: null: some validation rules were not checked '
               'because the object was invalid; correct the existing errors '
               'to complete validation')
    assert answer['message'] == (
        'VirtualMachine.kubevirt.io "typed" is invalid: [%s: %s, <nil>: %s]'
        % (field, detail, skipped))
    assert answer['details'] == {
        'name': 'typed', 'group': 'kubevirt.io', 'kind': 'VirtualMachine',
        'causes': [{'reason': 'FieldValueTypeInvalid', 'message': detail,
                    'field': field},
                   {'reason': 'FieldValueInvalid', 'message': skipped,
                    'field': '<nil>'}]}
    assert request(api, 'GET', VM_PATH + '/typed')[0] == 404


def test_several_errors_are_listed_and_formats_named(api):
    body = vm_body('many')
    body['spec']['template']['spec']['domain']['cpu']['cores'] = 1.5
    body['spec']['dataVolumeTemplates'][0]['spec']['contentType'] = 'iso'
    del body['spec']['template']
    body['spec']['template'] = None  # dropped: not nullable, then required
    status, _headers, answer = request(api, 'POST', VM_PATH, body)
    assert status == 422
    causes = {c['field']: c['message'] for c in answer['details']['causes']
              if c['field'] != '<nil>'}
    assert causes == {
        'spec.dataVolumeTemplates[0].spec.contentType':
            'Unsupported value: "iso": supported values: "kubevirt", '
            '"archive"',
        'spec.template': 'Required value'}
    body = vm_body('fraction')
    body['spec']['template']['spec']['domain']['cpu']['cores'] = 1.5
    status, _headers, answer = request(api, 'POST', VM_PATH, body)
    assert answer['details']['causes'][0] == {
        'reason': 'FieldValueTypeInvalid',
        'field': 'spec.template.spec.domain.cpu.cores',
        'message': 'Invalid value: "number": spec.template.spec.domain.cpu.'
                   'cores in body must be of type integer: "number"'}
    assert answer['message'].startswith(
        'VirtualMachine.kubevirt.io "fraction" is invalid: ')


def test_datavolume_url_must_be_a_string(api):
    body = {'apiVersion': 'cdi.kubevirt.io/v1beta1', 'kind': 'DataVolume',
            'metadata': {'name': 'seven'},
            'spec': {'source': {'http': {'url': 7}},
                     'storage': {'resources': {'requests': {
                         'storage': '1Gi'}}}}}
    status, _headers, answer = request(
        api, 'POST', '/apis/cdi.kubevirt.io/v1beta1/namespaces/default/'
        'datavolumes', body)
    assert status == 422
    assert answer['details']['causes'] == [{
        'reason': 'FieldValueTypeInvalid', 'field': 'spec.source.http.url',
        'message': 'Invalid value: "integer": spec.source.http.url in body '
                   'must be of type string: "integer"'}]


def test_unknown_fields_warn_by_default_and_are_pruned(api):
    body = vm_body('warned', foo={'bar': 1})
    body['metadata']['extra'] = True
    status, headers, answer = request(api, 'POST', VM_PATH, body)
    assert status == 201
    assert warnings(headers) == [
        '299 - "unknown field \\"metadata.extra\\""',
        '299 - "unknown field \\"spec.template.spec.domain.foo\\""']
    stored = request(api, 'GET', VM_PATH + '/warned')[2]
    assert 'foo' not in stored['spec']['template']['spec']['domain']
    assert 'extra' not in stored['metadata']
    assert answer['spec'] == stored['spec']


def test_ignore_prunes_silently(api):
    status, headers, answer = request(
        api, 'POST', VM_PATH, vm_body('quiet', foo=1),
        fieldValidation='Ignore')
    assert status == 201
    assert warnings(headers) == []
    assert 'foo' not in answer['spec']['template']['spec']['domain']


def test_strict_create_and_update_are_400(api):
    status, _headers, answer = request(
        api, 'POST', VM_PATH, vm_body('strict', foo=1),
        fieldValidation='Strict')
    assert (status, answer['reason']) == (400, 'BadRequest')
    assert answer['message'] == (
        'VirtualMachine in version "v1" cannot be handled as a '
        'VirtualMachine: strict decoding error: unknown field '
        '"spec.template.spec.domain.foo"')
    assert request(api, 'GET', VM_PATH + '/strict')[0] == 404
    created = request(api, 'POST', VM_PATH, vm_body('strict'))[2]
    created['spec']['template']['spec']['domain']['devices']['disks'][0][
        'typo'] = 1
    # Strict decoding comes first: a stale resourceVersion is not a 409.
    created['metadata']['resourceVersion'] = '1'
    status, _headers, answer = request(
        api, 'PUT', VM_PATH + '/strict', created, fieldValidation='Strict')
    assert status == 400
    assert answer['message'].endswith(
        'unknown field "spec.template.spec.domain.devices.disks[0].typo"')


def test_strict_json_patch_is_422_with_the_patched_object(api):
    request(api, 'POST', VM_PATH, vm_body('patched'))
    ops = [{'op': 'add', 'path': '/spec/template/spec/domain/foo',
            'value': 1}]
    status, _headers, answer = request(
        api, 'PATCH', VM_PATH + '/patched', ops, JSON_PATCH,
        fieldValidation='Strict')
    assert (status, answer['reason']) == (422, 'Invalid')
    cause, = answer['details']['causes']
    assert cause['field'] == 'patch'
    assert cause['message'].startswith('Invalid value: "{')
    assert cause['message'].endswith(
        '": strict decoding error: unknown field '
        '"spec.template.spec.domain.foo"')
    assert answer['message'].startswith(' "" is invalid: patch: ')


@pytest.mark.parametrize('ctype, body', [
    (JSON_PATCH, [{'op': 'add', 'path': '/spec/foo', 'value': 1}]),
    (MERGE_PATCH, {'spec': {'foo': 1}}),
])
def test_every_patch_type_prunes(api, ctype, body):
    request(api, 'POST', VM_PATH, vm_body('pruned'))
    before = request(api, 'GET', VM_PATH + '/pruned')[2]
    status, headers, answer = request(api, 'PATCH', VM_PATH + '/pruned',
                                      body, ctype)
    assert status == 200
    assert warnings(headers) == ['299 - "unknown field \\"spec.foo\\""']
    assert 'foo' not in answer['spec']
    # The spec did not change: the pruned patch was a no-op for it.
    assert answer['metadata']['generation'] == \
        before['metadata']['generation']


def test_apply_patch_prunes_and_records_apply(api):
    status, _headers, answer = request(
        api, 'PATCH', VM_PATH + '/applied', dict(vm_body('applied'), spec=dict(
            vm_body('applied')['spec'], foo=1)),
        'application/apply-patch+yaml', fieldManager='applier')
    assert status == 201
    assert 'foo' not in answer['spec']
    entry, = [e for e in answer['metadata']['managedFields']
              if e['manager'] == 'applier']
    assert entry['operation'] == 'Apply'


def test_mistyped_patch_is_rejected_and_changes_nothing(api):
    created = request(api, 'POST', VM_PATH, vm_body('guarded'))[2]
    ops = [{'op': 'replace', 'path': '/spec/runStrategy', 'value': 5}]
    status, _headers, answer = request(api, 'PATCH', VM_PATH + '/guarded',
                                       ops, JSON_PATCH)
    assert status == 422
    assert answer['details']['causes'][0]['field'] == 'spec.runStrategy'
    after = request(api, 'GET', VM_PATH + '/guarded')[2]
    assert after['spec'] == created['spec']
    assert after['metadata']['generation'] == 1


def test_unsupported_field_validation_is_422(api):
    status, _headers, answer = request(
        api, 'POST', VM_PATH, vm_body('bogus'), fieldValidation='Loud')
    assert status == 422
    assert answer['message'] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: '
        'Unsupported value: "Loud": supported values: "", "Ignore", '
        '"Strict", "Warn"')


def test_managers_are_recorded_per_writer(simulator, api):
    custom = client.CustomObjectsApi(api)
    request(api, 'POST', VM_PATH, vm_body('managed'))
    request(api, 'PATCH', VM_PATH + '/managed',
            {'metadata': {'labels': {'a': 'b'}}}, MERGE_PATCH,
            fieldManager='labeller')
    vmtools.action(custom, 'managed', 'start')
    vm, vmi = vmtools.wait_running(simulator, custom, 'managed')
    entries = {(e['manager'], e['operation'], e.get('subresource'))
               for e in vm['metadata']['managedFields']}
    assert entries >= {('schema-test', 'Update', None),
                       ('labeller', 'Update', None),
                       ('virt-api', 'Update', None),
                       ('virt-controller', 'Update', 'status')}
    for entry in vm['metadata']['managedFields']:
        assert entry['apiVersion'] == 'kubevirt.io/v1'
        assert entry['fieldsType'] == 'FieldsV1'
        assert entry['time'].endswith('Z')
    # The VMI CRD has no status subresource: whole-object updates.
    vmi_managers = {(e['manager'], e.get('subresource'))
                    for e in vmi['metadata']['managedFields']}
    assert vmi_managers == {('virt-controller', None),
                            ('virt-handler', None)}
    dv = custom.get_namespaced_custom_object(DV_G, DV_V, 'default', DVS,
                                             'managed-root')
    assert ('cdi-controller', 'status') in {
        (e['manager'], e.get('subresource'))
        for e in dv['metadata']['managedFields']}


def test_put_without_resource_version_names_the_resource(api):
    created = request(api, 'POST', VM_PATH, vm_body('norv'))[2]
    del created['metadata']['resourceVersion']
    status, _headers, answer = request(api, 'PUT', VM_PATH + '/norv',
                                       created)
    assert status == 422
    assert answer['message'] == (
        'virtualmachines.kubevirt.io "norv" is invalid: '
        'metadata.resourceVersion: Invalid value: 0: must be specified '
        'for an update')
    assert (answer['details']['kind'], answer['details']['group']) == (
        'virtualmachines', 'kubevirt.io')


def test_without_schemas_it_says_so_once(monkeypatch, caplog):
    monkeypatch.delenv('SUSHY_KUBEVIRT_SIMULATOR_CRD_SCHEMAS', raising=False)
    with caplog.at_level('INFO', logger='sushy_kubevirt.simulator'):
        with Simulator(**apitools.DEFAULTS) as sim:
            body = vm_body('loose')
            body['spec']['template']['spec']['domain']['cpu']['cores'] = 'x'
            sim.store.create(sim.store.resource('kubevirt.io',
                                                'virtualmachines'), body)
    said = [r.getMessage() for r in caplog.records
            if 'neither validated nor pruned' in r.getMessage()]
    assert len(said) == 1


def test_a_bad_schema_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match='has no \\*.json schema'):
        Simulator(crd_schemas=str(tmp_path))
    with pytest.raises(ValueError, match='No such file or directory'):
        Simulator(crd_schemas=str(tmp_path / 'missing'))


def test_a_missing_directory_in_the_environment_only_warns(monkeypatch,
                                                           caplog, tmp_path):
    monkeypatch.setenv('SUSHY_KUBEVIRT_SIMULATOR_CRD_SCHEMAS',
                       str(tmp_path / 'absent'))
    with caplog.at_level('WARNING', logger='sushy_kubevirt.simulator'):
        sim = Simulator(install=False)
    assert sim.schemas == {}
    assert 'is not a directory' in caplog.text
