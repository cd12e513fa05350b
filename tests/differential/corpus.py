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

"""The corpus: request sequences sent alike to both servers.

Each case is ``fn(session)``; it runs in its own namespace (``diff-`` and
the case name, with dashes) and records every answer it wants compared.
Reads, lists and watches are in ``corpus_reads``, writes in
``corpus_writes``, lifecycles (garbage collection, namespaces,
compaction) in ``corpus_lifecycle``; this module keeps the registry and
the bodies they share.
"""

CASES = {}

JSON_PATCH = 'application/json-patch+json'
MERGE_PATCH = 'application/merge-patch+json'
APPLY_PATCH = 'application/apply-patch+yaml'
STRATEGIC_PATCH = 'application/strategic-merge-patch+json'


def case(fn):
    """Register ``fn`` as a case named after it (without ``case_``)."""
    CASES[fn.__name__[len('case_'):]] = fn
    return fn


def widget(name, labels=None, spec=None, **meta):
    meta = dict(meta, name=name)
    if labels:
        meta['labels'] = labels
    return {'apiVersion': 'sim.example.com/v1', 'kind': 'Widget',
            'metadata': meta, 'spec': {'size': 1} if spec is None else spec}


def vm(name, template_spec=None, **spec):
    """A VirtualMachine body; ``template_spec`` replaces the valid one."""
    if template_spec is None:
        template_spec = {'domain': {
            'cpu': {'cores': 1}, 'devices': {},
            'resources': {'requests': {'memory': '64Mi'}}}}
    spec.setdefault('runStrategy', 'Halted')
    spec['template'] = {'spec': template_spec}
    return {'apiVersion': 'kubevirt.io/v1', 'kind': 'VirtualMachine',
            'metadata': {'name': name}, 'spec': spec}


def vms(session, name=''):
    path = '/apis/kubevirt.io/v1/namespaces/%s/virtualmachines' % (
        session.namespace)
    return path + ('/' + name if name else '')


def secrets(session, name=''):
    path = '/api/v1/namespaces/%s/secrets' % session.namespace
    return path + ('/' + name if name else '')


def leases(session, name=''):
    path = '/apis/coordination.k8s.io/v1/namespaces/%s/leases' % (
        session.namespace)
    return path + ('/' + name if name else '')


def rv_order(first, second):
    """A resourceVersion ordering fact: increased, same or decreased."""
    a, b = int(first), int(second)
    return 'same' if a == b else ('increased' if b > a else 'decreased')
