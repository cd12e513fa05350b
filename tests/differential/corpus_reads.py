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

"""Cases: gets, lists (resourceVersion, paging, selectors) and watches."""

from tests.differential.corpus import case
from tests.differential.corpus import MERGE_PATCH
from tests.differential.corpus import secrets
from tests.differential.corpus import widget


def _three(s):
    """Create w1, w2, w3; return their answers."""
    return [s.post(s.widgets(), widget(n, labels={'tier': t}))
            for n, t in (('w1', 'a'), ('w2', 'b'), ('w3', 'a'))]


@case
def case_get_not_found(s):
    s.get(s.widgets('missing'))
    s.get('/apis/sim.example.com/v1/namespaces/%s/gadgets' % s.namespace)
    s.get('/apis/sim.example.com/v2/namespaces/%s/widgets' % s.namespace)


@case
def case_list_resource_versions(s):
    w1, w2, _w3 = _three(s)
    s.get(s.widgets())
    s.get(s.widgets(), query={'resourceVersion': '0'})
    s.get(s.widgets(), query={'resourceVersion': w1.rv,
                              'resourceVersionMatch': 'Exact'})
    s.get(s.widgets(), query={'resourceVersion': w2.rv,
                              'resourceVersionMatch': 'NotOlderThan'})
    s.get(s.widgets(), query={'resourceVersion': w2.rv})
    # resourceVersion with limit and no match: the legacy exact list.
    s.get(s.widgets(), query={'resourceVersion': w1.rv, 'limit': '5'})


@case
def case_list_future_resource_version(s):
    w1 = s.post(s.widgets(), widget('w1'))
    future = str(int(w1.rv) + 100000)
    s.get(s.widgets(), query={'resourceVersion': future,
                              'resourceVersionMatch': 'NotOlderThan'})


@case
def case_list_pagination(s):
    _three(s)
    first = s.get(s.widgets(), query={'limit': '2'})
    token = first['metadata']['continue']
    s.get(s.widgets(), query={'limit': '2', 'continue': token})
    s.get(s.widgets(), query={'limit': '1', 'labelSelector': 'tier=a'})
    s.get(s.widgets(), query={'limit': '2', 'resourceVersion': '0'})
    s.get(s.widgets(), query={'limit': '2', 'continue': 'garbage'})


@case
def case_list_invalid_options(s):
    w1 = s.post(s.widgets(), widget('w1'))
    for query in (
            {'resourceVersionMatch': 'Exact'},
            {'resourceVersion': '0', 'resourceVersionMatch': 'Exact'},
            {'resourceVersion': w1.rv, 'resourceVersionMatch': 'Newest'},
            {'resourceVersion': w1.rv, 'resourceVersionMatch': 'Exact',
             'continue': 'x'},
            {'sendInitialEvents': 'true'},
            {'resourceVersion': 'abc'},
            {'limit': 'x'},
            {'timeoutSeconds': 'x'}):
        s.get(s.widgets(), query=query)


@case
def case_label_selectors(s):
    _three(s)
    s.patch(s.widgets('w2'), {'metadata': {'labels': {'extra': 'y'}}},
            MERGE_PATCH)
    for selector in ('tier=a', 'tier==b', 'tier!=a', 'tier in (a,b)',
                     'tier notin (a)', 'extra', '!extra', 'tier=a,!extra',
                     'tier=(', 'bad key!=x'):
        s.get(s.widgets(), query={'labelSelector': selector})


@case
def case_field_selectors(s):
    _three(s)
    for selector in ('metadata.name=w2', 'metadata.name!=w2',
                     'metadata.namespace=%s' % s.namespace,
                     'metadata.name=w1,metadata.namespace=other',
                     'spec.size=1', 'status.phase=Running'):
        s.get(s.widgets(), query={'fieldSelector': selector})
    s.get('/apis/sim.example.com/v1/widgets',
          query={'fieldSelector': 'metadata.namespace=%s,metadata.name=w3'
                 % s.namespace})


@case
def case_watch_from_resource_version(s):
    w1 = s.post(s.widgets(), widget('w1'))
    s.patch(s.widgets('w1'), {'spec': {'size': 2}}, MERGE_PATCH)
    s.post(s.widgets(), widget('w2'))
    s.delete(s.widgets('w1'))
    s.watch(s.widgets(), {'resourceVersion': w1.rv, 'timeoutSeconds': '1'})
    s.watch(s.widgets(), {'resourceVersion': w1.rv, 'timeoutSeconds': '1',
                          'fieldSelector': 'metadata.name=w2'})


@case
def case_watch_initial_events(s):
    _three(s)
    s.watch(s.widgets(), {'timeoutSeconds': '1'})
    s.watch(s.widgets(), {'resourceVersion': '0', 'timeoutSeconds': '1',
                          'labelSelector': 'tier=a'})
    s.watch(s.widgets(), {'resourceVersion': '0',
                          'allowWatchBookmarks': 'true'},
            until=lambda e: e['type'] == 'BOOKMARK')
    s.watch(s.widgets(), {'sendInitialEvents': 'true',
                          'resourceVersionMatch': 'NotOlderThan',
                          'allowWatchBookmarks': 'true'},
            until=lambda e: e['type'] == 'BOOKMARK')


@case
def case_watch_bookmarks_and_timeout(s):
    w1 = s.post(s.widgets(), widget('w1'))
    query = {'resourceVersion': w1.rv, 'allowWatchBookmarks': 'true',
             'timeoutSeconds': '3'}
    # Nothing newer for widgets: no bookmark (its RV would be w1's).
    s.watch(s.widgets(), query)
    s.fact('ended by timeoutSeconds', 2.5 < s.elapsed < 6)
    # Another resource's write, then a consistent list of widgets: the
    # widgets' watch cache catches up with it, bookmarks carry its RV.
    s.post(secrets(s), {'metadata': {'name': 's1'}})
    s.get(s.widgets(), record=False)
    s.watch(s.widgets(), query, collapse_bookmarks=True)


@case
def case_watch_invalid_options(s):
    for query in ({'resourceVersionMatch': 'NotOlderThan'},
                  {'sendInitialEvents': 'true'},
                  {'sendInitialEvents': 'true',
                   'resourceVersionMatch': 'Exact'},
                  {'resourceVersion': 'abc'}):
        s.watch(s.widgets(), dict(query, timeoutSeconds='1'))


@case
def case_watch_selector_transitions(s):
    w1 = s.post(s.widgets(), widget('w1', labels={'tier': 'a'}))
    s.patch(s.widgets('w1'), {'metadata': {'labels': {'tier': 'b'}}},
            MERGE_PATCH)
    s.patch(s.widgets('w1'), {'metadata': {'labels': {'tier': 'a'}}},
            MERGE_PATCH)
    s.patch(s.widgets('w1'), {'spec': {'size': 5}}, MERGE_PATCH)
    s.watch(s.widgets(), {'resourceVersion': w1.rv, 'timeoutSeconds': '1',
                          'labelSelector': 'tier=a'})


@case
def case_list_paging_while_writing(s):
    """Pages keep the first page's state; selectors page by key."""
    for n in range(1, 8):
        s.post(s.widgets(), widget('w%d' % n,
                                   labels={'tier': 'a' if n < 6 else 'b'}))
    page = s.get(s.widgets(), query={'limit': '2'})
    s.post(s.widgets(), widget('w0'))
    s.delete(s.widgets('w5'))
    s.patch(s.widgets('w4'), {'spec': {'size': 4}}, MERGE_PATCH)
    s.post(s.widgets(), widget('w8'))
    for _ in range(4):
        page = s.get(s.widgets(), query={
            'limit': '2', 'continue': page['metadata']['continue']})
        if not page['metadata'].get('continue'):
            break
    for limit in ('2', '3', '4'):
        page = s.get(s.widgets(), query={'limit': limit,
                                         'labelSelector': 'tier=a'})
        if page['metadata'].get('continue'):
            s.get(s.widgets(), query={
                'limit': limit, 'labelSelector': 'tier=a',
                'continue': page['metadata']['continue']})
