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

"""Cases: create, update, patch (all types), apply, delete, validation."""

import json

from tests.differential.corpus import APPLY_PATCH
from tests.differential.corpus import case
from tests.differential.corpus import JSON_PATCH
from tests.differential.corpus import leases
from tests.differential.corpus import MERGE_PATCH
from tests.differential.corpus import rv_order
from tests.differential.corpus import secrets
from tests.differential.corpus import STRATEGIC_PATCH
from tests.differential.corpus import vm
from tests.differential.corpus import vms
from tests.differential.corpus import widget


@case
def case_create_errors(s):
    s.post(s.widgets(), widget('w1'))
    s.post(s.widgets(), widget('w1'))
    s.post(s.widgets(), widget('', generateName='gen-'))
    s.post(s.widgets(), widget(''))
    s.post(s.widgets(), dict(widget('w2'), kind='Gadget'))
    s.post(s.widgets(), dict(widget('w2'), apiVersion='sim.example.com/v2'))
    s.post(s.widgets(), widget('w3', namespace='elsewhere'))
    s.post('/apis/sim.example.com/v1/namespaces/no-such-ns/widgets',
           widget('w4'))
    s.call('POST', s.widgets(), data='{"metadata": ')


@case
def case_put(s):
    w1 = s.post(s.widgets(), widget('w1', spec={'size': 1}))
    body = w1.body
    body['spec']['size'] = 2
    s.put(s.widgets('w1'), dict(body, metadata={'name': 'w1'}))
    w2 = s.put(s.widgets('w1'), body)
    s.fact('rv after PUT', rv_order(w1.rv, w2.rv))
    s.put(s.widgets('w1'), body)   # stale now
    same = s.put(s.widgets('w1'), w2.body)   # no change
    s.fact('rv after a no-op PUT', rv_order(w2.rv, same.rv))
    s.put(s.widgets('w9'), dict(w2.body, metadata=dict(
        w2['metadata'], name='w9')))
    s.put(s.widgets('w1'), dict(w2.body, metadata=dict(
        w2['metadata'], name='other')))


@case
def case_status_subresource(s):
    w1 = s.post(s.widgets(), dict(widget('w1'), status={'phase': 'Ready'}))
    st = s.put(s.widgets('w1') + '/status', dict(
        w1.body, status={'phase': 'Ready'}, spec={'size': 9}))
    body = st.body
    body['status'] = {'phase': 'Gone'}
    body['spec'] = {'size': 3}
    s.put(s.widgets('w1'), body)
    s.patch(s.widgets('w1') + '/status', {'status': {'phase': 'Done'}},
            MERGE_PATCH)
    s.get(s.widgets('w1'))


@case
def case_json_patch(s):
    w1 = s.post(s.widgets(), widget('w1', spec={'size': 1, 'items': [1]}))
    after = s.patch(s.widgets('w1'), [
        {'op': 'replace', 'path': '/spec/size', 'value': 2},
        {'op': 'add', 'path': '/spec/items/-', 'value': 2}], JSON_PATCH)
    s.fact('rv after patch', rv_order(w1.rv, after.rv))
    s.patch(s.widgets('w1'), [{'op': 'test', 'path': '/spec/size',
                               'value': 7}], JSON_PATCH)
    s.patch(s.widgets('w1'), [{'op': 'remove', 'path': '/spec/nothing'}],
            JSON_PATCH)
    s.patch(s.widgets('w1'), [{'op': 'frobnicate', 'path': '/spec'}],
            JSON_PATCH)
    s.patch(s.widgets('w1'), {'op': 'add'}, JSON_PATCH)
    s.patch(s.widgets('w1'), [{'op': 'test', 'path': '/spec/size',
                               'value': 2},
                              {'op': 'replace', 'path': '/metadata/'
                               'resourceVersion', 'value': w1.rv}],
            JSON_PATCH)
    s.patch(s.widgets('missing'), [{'op': 'test', 'path': '/spec',
                                    'value': {}}], JSON_PATCH)


@case
def case_merge_patch(s):
    w1 = s.post(s.widgets(), widget('w1', spec={
        'size': 1, 'items': [1, 2, 3], 'nested': {'a': 1, 'b': 2}}))
    s.patch(s.widgets('w1'), {'spec': {'items': [4], 'nested': {'a': None},
                                       'size': None}}, MERGE_PATCH)
    again = s.patch(s.widgets('w1'), {'spec': {'items': [4]}}, MERGE_PATCH)
    same = s.patch(s.widgets('w1'), {'spec': {'items': [4]}}, MERGE_PATCH)
    s.fact('rv after a no-op patch', rv_order(again.rv, same.rv))
    s.patch(s.widgets('w1'), {'metadata': {'resourceVersion': w1.rv},
                              'spec': {'x': 1}}, MERGE_PATCH)
    s.patch(s.widgets('w1'), [1, 2], MERGE_PATCH)
    s.patch(s.widgets('w1'), '{not json', MERGE_PATCH)


@case
def case_strategic_merge_patch(s):
    s.post(s.widgets(), widget('w1'))
    s.patch(s.widgets('w1'), {'spec': {'size': 2}}, STRATEGIC_PATCH)
    s.patch(s.widgets('w1'), {'spec': {'size': 2}}, 'text/plain')
    s.post(secrets(s), {'metadata': {'name': 's1'}, 'data': {}})
    s.patch(secrets(s, 's1'), {'stringData': {'k': 'v'}}, STRATEGIC_PATCH)


def _apply(s, name, manager, spec, force=False, **query):
    body = json.dumps({'apiVersion': 'sim.example.com/v1', 'kind': 'Widget',
                       'metadata': {'name': name}, 'spec': spec})
    query = dict(query, fieldManager=manager) if manager else query
    if force:
        query['force'] = 'true'
    return s.patch(s.widgets(name), body, APPLY_PATCH, query=query)


@case
def case_server_side_apply(s):
    first = _apply(s, 'w1', 'alice', {'size': 1, 'color': 'red'})
    same = _apply(s, 'w1', 'alice', {'size': 1, 'color': 'red'})
    s.fact('rv after the same apply', rv_order(first.rv, same.rv))
    _apply(s, 'w1', 'bob', {'size': 2})
    _apply(s, 'w1', 'bob', {'size': 1})   # same value: shared, no conflict
    _apply(s, 'w1', 'bob', {'size': 3, 'color': 'blue'}, force=True)
    _apply(s, 'w1', 'alice', {'size': 3})   # drops color: bob owns it
    s.patch(s.widgets('w1'), {'spec': {'size': 4}}, MERGE_PATCH,
            query={'fieldManager': 'carol'})
    _apply(s, 'w1', 'alice', {'size': 5})
    _apply(s, 'w1', None, {'size': 1})
    _apply(s, 'w2', 'alice', {'size': 1}, force='true')
    s.patch(s.widgets('w2'), '{"spec": {"size": 2}', APPLY_PATCH,
            query={'fieldManager': 'alice'})


@case
def case_field_validation(s):
    bad = vm('vm1')
    bad['spec']['foo'] = 1
    bad['spec']['template']['spec']['domain']['cpu']['bar'] = 2
    for directive in ('Strict', 'Warn', 'Ignore', 'Loud'):
        s.post(vms(s), dict(bad, metadata={'name': 'vm-' +
                                           directive.lower()}),
               query={'fieldValidation': directive})
    s.post(vms(s), dict(bad, metadata={'name': 'vm-default'}))
    dup = ('{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", '
           '"metadata": {"name": "vm-dup-%s"}, "spec": {"runStrategy": '
           '"Halted", "runStrategy": "Always", "template": {"spec": '
           '{"domain": {"devices": {}}}}}}')
    for directive in ('Strict', 'Warn', 'Ignore'):
        s.call('POST', vms(s), data=dup % directive.lower(),
               query={'fieldValidation': directive})
    current = s.get(vms(s, 'vm-warn'))
    s.patch(vms(s, 'vm-warn'), {'spec': {'baz': 1}}, MERGE_PATCH,
            query={'fieldValidation': 'Strict'})
    s.patch(vms(s, 'vm-warn'), {'spec': {'baz': 1}}, MERGE_PATCH,
            query={'fieldValidation': 'Warn'})
    s.put(vms(s, 'vm-warn'), dict(current.body, extra=1),
          query={'fieldValidation': 'Strict'})
    s.post(s.widgets(), dict(widget('w1'), metadata={
        'name': 'w1', 'bogus': 1}), query={'fieldValidation': 'Strict'})
    s.post(s.widgets(), dict(widget('w2'), spec={'anything': {'x': 1}}),
           query={'fieldValidation': 'Strict'})


@case
def case_vm_schema(s):
    s.post(vms(s), vm('ok'))
    s.post(vms(s), vm('cores', {'domain': {'cpu': {'cores': 'two'},
                                           'devices': {}}}))
    s.post(vms(s), vm('frac', {'domain': {'cpu': {'cores': 1.5},
                                          'devices': {}}}))
    s.post(vms(s), vm('nodevices', {'domain': {}}))
    s.post(vms(s), {'apiVersion': 'kubevirt.io/v1',
                    'kind': 'VirtualMachine',
                    'metadata': {'name': 'nospec'}})
    s.post(vms(s), vm('running', running='yes'))
    s.post(vms(s), vm('many', {'domain': {'cpu': {'cores': 'x',
                                                  'sockets': False},
                                          'devices': {'disks': 'none'}}}))
    s.patch(vms(s, 'ok'), {'spec': {'template': {'spec': {'domain': {
        'cpu': {'cores': 'three'}}}}}}, MERGE_PATCH)


@case
def case_delete(s):
    w1 = s.post(s.widgets(), widget('w1'))
    s.delete(s.widgets('w1'), {'preconditions': {'uid': 'not-the-uid'}})
    s.delete(s.widgets('w1'), {'preconditions': {'resourceVersion': '1'}})
    s.delete(s.widgets('w1'), {'preconditions': {'uid': w1.uid,
                                                 'resourceVersion': w1.rv}})
    s.delete(s.widgets('w1'))
    s.post(s.widgets(), widget('w2', finalizers=['example.com/hold']))
    s.delete(s.widgets('w2'))
    s.delete(s.widgets('w2'))
    s.patch(s.widgets('w2'), {'metadata': {'finalizers': None}},
            MERGE_PATCH)
    s.get(s.widgets('w2'))
    s.post(s.widgets(), widget('w3', labels={'x': '1'}))
    s.post(s.widgets(), widget('w4', labels={'x': '2'}))
    s.delete(s.widgets(), query={'labelSelector': 'x=1'})
    s.get(s.widgets())


@case
def case_secrets(s):
    s.post(secrets(s), {'metadata': {'name': 's1'},
                        'stringData': {'user': 'admin'},
                        'data': {'user': 'b3RoZXI=', 'pw': 'cHc='}})
    current = s.get(secrets(s, 's1'))
    s.put(secrets(s, 's1'), dict(current.body, type='example.com/other'))
    s.put(secrets(s, 's1'), dict(current.body, stringData={'pw': 'new'}))
    s.patch(secrets(s, 's1'), {'stringData': {'more': 'x'}}, MERGE_PATCH)
    s.post(secrets(s), {'metadata': {'name': 's2'},
                        'data': {'k': 'not base64!'}})
    s.post(secrets(s), {'metadata': {'name': 's3'}, 'type': 'Custom',
                        'data': {'bad key': 'eA=='}})
    s.post(secrets(s), {'metadata': {'name': 's4'}, 'immutable': True,
                        'data': {'k': 'eA=='}})
    s.patch(secrets(s, 's4'), {'data': {'k': 'eQ=='}}, MERGE_PATCH)


@case
def case_leases(s):
    lease = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
             'metadata': {'name': 'leader'},
             'spec': {'holderIdentity': 'a', 'leaseDurationSeconds': 15,
                      'acquireTime': '2026-01-01T00:00:00.000000Z',
                      'renewTime': '2026-01-01T00:00:01.000000Z',
                      'leaseTransitions': 0}}
    created = s.post(leases(s), lease)
    body = created.body
    body['spec']['holderIdentity'] = 'b'
    body['spec']['leaseTransitions'] = 1
    s.put(leases(s, 'leader'), body)
    s.put(leases(s, 'leader'), body)   # stale
    s.post(leases(s), dict(lease, metadata={'name': 'bad'},
                           spec={'leaseDurationSeconds': 'long'}))
    s.get(leases(s), query={'fieldSelector': 'metadata.name=leader'})
