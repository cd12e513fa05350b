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

"""Driver calls take a request object, outside any Flask request."""

import pytest

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import preconditions
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt import messages

OPS = [{'op': 'add', 'path': '/spec/running', 'value': True}]


class Cluster:
    """One VM at resourceVersion 2; patches recorded, one may conflict."""

    def __init__(self):
        self.vm = {'metadata': {'name': 'vm', 'namespace': 'ns',
                                'resourceVersion': '2'}}
        self.patches = []
        self.conflict = False

    def get_vm(self, namespace, name):
        return self.vm

    def patch_vm(self, namespace, name, ops):
        self.patches.append(ops)
        if self.conflict:
            raise apierrors.Conflict('moved on', status=409)
        return self.vm


def _version(vm, version):
    return dict(vm, metadata=dict(vm['metadata'], resourceVersion=version))


def test_outside_a_request_nothing_is_bound():
    request = context.current()
    assert (request.account, request.held, request.memo) == (None, None, {})
    assert request.reaches('any', {'team': 'a'})
    request.memo['kept'] = True
    assert context.current().memo == {}   # a fresh one each time


def test_the_account_decides_the_reach():
    team = accountsfile.Account('team', 'Operator', frozenset(['test']))
    request = context.Request(account=team)
    assert request.reaches('test') and not request.reaches('lab')


def test_a_held_if_match_guards_the_first_write_only():
    cluster, request = Cluster(), context.Request()
    preconditions.hold(request, _version(cluster.vm, '1'), '"e1"')
    preconditions.patch(cluster, 'ns', 'vm', lambda vm: OPS,
                        request=request)
    preconditions.patch(cluster, 'ns', 'vm', lambda vm: OPS,
                        request=request)
    assert [ops[0]['value'] for ops in cluster.patches] == ['1', '2']
    assert request.held is None


def test_a_write_after_another_fails_its_precondition():
    cluster, request = Cluster(), context.Request()
    cluster.conflict = True
    preconditions.hold(request, cluster.vm, '"e2"')
    with pytest.raises(messages.RedfishError) as exc:
        preconditions.claim(cluster, 'ns', 'vm', request=request)
    assert (exc.value.code, exc.value.message_id) == (
        412, 'PreconditionFailed')
    assert len(cluster.patches) == 1


def test_verify_compares_the_held_version():
    cluster, request = Cluster(), context.Request()
    preconditions.verify(cluster.vm, request)   # nothing held
    preconditions.hold(request, _version(cluster.vm, '1'), '"e1"')
    with pytest.raises(messages.RedfishError) as exc:
        preconditions.verify(cluster.vm, request)
    assert exc.value.code == 412
    assert request.held is not None   # kept for the first write


def test_calls_with_fixed_signatures_see_the_bound_request():
    cluster, request = Cluster(), context.Request()
    preconditions.hold(request, _version(cluster.vm, '1'), '"e1"')
    preconditions.patch(cluster, 'ns', 'vm', lambda vm: OPS)
    assert request.held is not None   # not bound: not seen
    with context.bound(request):
        preconditions.patch(cluster, 'ns', 'vm', lambda vm: OPS)
    assert request.held is None
    assert [ops[0]['value'] for ops in cluster.patches] == ['2', '1']
