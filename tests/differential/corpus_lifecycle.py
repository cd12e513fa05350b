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

"""Cases: garbage collection, namespace deletion and compaction.

Compaction runs last: on the real server it restarts kube-apiserver.
"""

from tests.differential.corpus import case
from tests.differential.corpus import MERGE_PATCH
from tests.differential.corpus import secrets
from tests.differential.corpus import widget

GC_TIMEOUT = 60.0   # kube-controller-manager's GC rediscovers every 30 s


def _owned(s, owner, name, block=None):
    ref = {'apiVersion': 'sim.example.com/v1', 'kind': 'Widget',
           'name': owner['metadata']['name'], 'uid': owner.uid}
    if block is not None:
        ref['blockOwnerDeletion'] = block
    return s.post(s.widgets(), widget(name, ownerReferences=[ref]))


@case
def case_gc_background(s):
    owner = s.post(s.widgets(), widget('owner'))
    _owned(s, owner, 'dep')
    s.delete(s.widgets('owner'))
    s.await_(lambda: s.gone(s.widgets('dep')), GC_TIMEOUT,
             'dependent deleted')
    s.get(s.widgets('dep'))


@case
def case_gc_foreground(s):
    owner = s.post(s.widgets(), widget('owner'))
    _owned(s, owner, 'dep', block=True)
    s.delete(s.widgets('owner'), {'propagationPolicy': 'Foreground'})
    s.await_(lambda: s.gone(s.widgets('owner')), GC_TIMEOUT,
             'owner deleted')
    s.get(s.widgets('dep'))


@case
def case_gc_orphan(s):
    owner = s.post(s.widgets(), widget('owner'))
    _owned(s, owner, 'dep')
    s.delete(s.widgets('owner'), {'propagationPolicy': 'Orphan'})
    s.await_(lambda: s.gone(s.widgets('owner')), GC_TIMEOUT,
             'owner deleted')
    s.get(s.widgets('dep'))
    s.delete(s.widgets('dep'), {'propagationPolicy': 'Sideways'})


@case
def case_namespace_deletion(s):
    ns = '/api/v1/namespaces/%s' % s.namespace
    s.get(ns)
    s.post(s.widgets(), widget('w1'))
    s.post(s.widgets(), widget('w2', finalizers=['example.com/hold']))
    s.post(secrets(s), {'metadata': {'name': 's1'}})
    s.delete(ns)
    s.post(s.widgets(), widget('w3'))
    s.await_(lambda: s.gone(s.widgets('w1')), GC_TIMEOUT, 'w1 deleted')
    s.get(s.widgets())
    s.patch(s.widgets('w2'), {'metadata': {'finalizers': None}},
            MERGE_PATCH)
    s.await_(lambda: s.gone(ns), GC_TIMEOUT, 'namespace deleted')
    s.get(ns)
    s.get(secrets(s, 's1'))


@case
def case_compaction(s):
    w1 = s.post(s.widgets(), widget('w1'))
    s.post(s.widgets(), widget('w2'))
    s.patch(s.widgets('w1'), {'spec': {'size': 2}}, MERGE_PATCH)
    page = s.get(s.widgets(), query={'limit': '1'})
    s.post(s.widgets(), widget('w3'))   # the page's RV is now history
    s.backend.compact()
    s.watch(s.widgets(), {'resourceVersion': w1.rv, 'timeoutSeconds': '5'})
    s.get(s.widgets(), query={'resourceVersion': w1.rv,
                              'resourceVersionMatch': 'Exact'})
    s.get(s.widgets(), query={'limit': '1',
                              'continue': page['metadata']['continue']})
    s.get(s.widgets())
    w4 = s.post(s.widgets(), widget('w4'))
    s.patch(s.widgets('w4'), {'spec': {'size': 4}}, MERGE_PATCH)
    s.watch(s.widgets(), {'resourceVersion': w4.rv, 'timeoutSeconds': '1'})
