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

"""A System's ETag is kept while the watch cache's generation holds."""

import pytest

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import etagmemo

UUID = '4f1d3c2a-0000-4000-8000-000000000001'


class Cluster:
    def __init__(self):
        self.generations = {'ns-a': ('ns-a', 1, 1), 'ns-b': ('ns-b', 1, 1)}

    def generation(self, namespace):
        return self.generations.get(namespace)


class Account:
    def __init__(self, namespaces):
        self.namespaces = namespaces

    def reaches(self, namespace, labels=None):
        return namespace in self.namespaces


@pytest.fixture
def memo():
    cluster, computed = Cluster(), []
    state = {'namespace': 'ns-a', 'etag': '"1"'}

    def compute(ident):
        computed.append(ident)
        vm = {'metadata': {'name': 'vm', 'namespace': state['namespace']},
              'spec': {'template': {'spec': {'domain': {'firmware': {
                  'uuid': UUID}}}}}}
        return vm, state['etag']
    with context.bound(context.Request()):
        yield etagmemo.ETags(lambda: cluster, compute), cluster, computed, \
            state


def test_kept_while_the_generation_holds(memo):
    etags, cluster, computed, state = memo
    # Computed twice: the first time tells the namespace whose
    # generation is read before the second.
    assert [etags.etag(UUID) for _ in range(5)] == ['"1"'] * 5
    assert computed == [UUID, UUID]
    state['etag'] = '"2"'
    cluster.generations['ns-a'] = ('ns-a', 2, 1)
    assert etags.etag(UUID) == '"2"'
    assert [etags.etag(UUID) for _ in range(3)] == ['"2"'] * 3
    assert len(computed) == 3


def test_computed_while_the_caches_cannot_say(memo):
    etags, cluster, computed, state = memo
    cluster.generations.clear()
    assert [etags.etag(UUID) for _ in range(3)] == ['"1"'] * 3
    assert len(computed) == 3


def test_a_move_to_another_namespace_is_computed_again(memo):
    etags, cluster, computed, state = memo
    etags.etag(UUID), etags.etag(UUID)
    state.update(namespace='ns-b', etag='"b"')
    cluster.generations['ns-a'] = ('ns-a', 2, 1)
    assert [etags.etag(UUID) for _ in range(4)] == ['"b"'] * 4
    assert len(computed) == 4   # twice: ns-b's generation is learnt


def test_the_account_must_reach_the_vm(memo):
    etags, cluster, computed, state = memo
    etags.etag(UUID), etags.etag(UUID)
    context.current().account = Account({'ns-b'})
    etags.etag(UUID)
    assert len(computed) == 3   # the driver decides (a 404 there)
    context.current().account = Account({'ns-a'})
    etags.etag(UUID)
    assert len(computed) == 3


def test_other_ids_are_not_kept(memo):
    etags, cluster, computed, state = memo
    for _ in range(3):
        etags.etag('ns-a.vm')
    assert len(computed) == 3


def test_kept_reads_only_what_is_kept(memo):
    etags, cluster, computed, state = memo
    everywhere = Account({'ns-a', 'ns-b'}).reaches
    assert etags.kept(UUID, everywhere) is None
    etags.etag(UUID), etags.etag(UUID)
    assert etags.kept(UUID, everywhere) == '"1"'
    # The account given is asked, not the request's.
    assert etags.kept(UUID, Account({'ns-b'}).reaches) is None
    cluster.generations['ns-a'] = ('ns-a', 2, 1)
    assert etags.kept(UUID, everywhere) is None
    assert len(computed) == 2
