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

"""Paging over HTTP: every page is a read of the first page's snapshot."""

import threading

from kubernetes import client
import pytest
from tests.functional.simulator import apitools

G, V, P = apitools.GROUP, apitools.VERSION, apitools.PLURAL
NAMESPACES = ('default', 'ns-a', 'ns-b')
pytestmark = pytest.mark.simulator(install=False, history_size=100_000)


@pytest.fixture
def widgets(custom, simulator):
    for ns in NAMESPACES[1:]:
        apitools.ensure_namespace(simulator, ns)
    for i in range(60):
        apitools.create(custom, 'w%02d' % i, NAMESPACES[i % 3],
                        labels={'tier': 'a' if i % 4 else 'b'})
    return custom


def _seen(items):
    return [(o['metadata']['namespace'], o['metadata']['name'],
             o['metadata']['resourceVersion']) for o in items]


def _page_all(custom, first, between=None, **query):
    """The pages after ``first``, following continue tokens.

    ``between()`` is called before each page.
    """
    pages, page = [], first
    for _ in range(1000):
        token = page['metadata'].get('continue')
        if not token:
            return pages
        if between is not None:
            between()
        page = custom.list_cluster_custom_object(G, V, P, _continue=token,
                                                 **query)
        pages.append(page)
    raise AssertionError('paging did not end')


class _Writer(threading.Thread):
    """Creates, changes and deletes widgets until stopped."""

    def __init__(self, custom):
        super().__init__(daemon=True)
        self.custom = custom
        self.done = threading.Event()
        self.writes = 0

    def run(self):
        for i in range(100_000):
            if self.done.is_set():
                return
            ns, n = NAMESPACES[i % 3], i % 60
            apitools.create(self.custom, 'x%05d' % i, ns)
            self.custom.patch_namespaced_custom_object(
                G, V, NAMESPACES[n % 3], P, 'w%02d' % n,
                {'spec': {'size': i + 2}})
            if i % 5 == 0:
                self.custom.delete_namespaced_custom_object(
                    G, V, ns, P, 'x%05d' % i)
            self.writes += 3

    def stop(self):
        self.done.set()
        self.join(10)


def test_pages_are_the_first_pages_snapshot_while_objects_change(
        widgets, simulator):
    whole = widgets.list_cluster_custom_object(G, V, P)
    first = widgets.list_cluster_custom_object(G, V, P, limit=7)
    assert first['metadata']['resourceVersion'] == \
        whole['metadata']['resourceVersion']
    writer = _Writer(widgets)
    writer.start()

    def after_writes():   # every page follows writes
        done = writer.writes
        simulator.wait_for(lambda: writer.writes > done)
    try:
        pages = _page_all(widgets, first, between=after_writes, limit=7)
    finally:
        writer.stop()
    items = first['items'] + [o for p in pages for o in p['items']]
    assert _seen(items) == _seen(whole['items'])
    assert {p['metadata']['resourceVersion'] for p in pages} == \
        {first['metadata']['resourceVersion']}
    assert len(pages) == 8


def test_remaining_item_count_counts_down(widgets):
    first = widgets.list_cluster_custom_object(G, V, P, limit=25)
    apitools.create(widgets, 'late')
    pages = [first] + _page_all(widgets, first, limit=25)
    assert [p['metadata'].get('remainingItemCount') for p in pages] == \
        [35, 10, None]
    assert [len(p['items']) for p in pages] == [25, 25, 10]


@pytest.mark.simulator(install=False, history_size=20)
def test_continue_once_history_moved_on_is_410(widgets, simulator):
    first = widgets.list_cluster_custom_object(G, V, P, limit=10)
    second = widgets.list_cluster_custom_object(
        G, V, P, limit=10, _continue=first['metadata']['continue'])
    for i in range(25):   # the list's resourceVersion leaves history
        apitools.create(widgets, 'x%02d' % i)
    assert simulator.store.compacted_resource_version > \
        int(first['metadata']['resourceVersion'])
    with pytest.raises(client.ApiException) as exc:
        widgets.list_cluster_custom_object(
            G, V, P, limit=10, _continue=second['metadata']['continue'])
    assert exc.value.status == 410
    status = apitools.body(exc.value)
    assert status['reason'] == 'Expired'
    # The inconsistent token finishes the list at the current state.
    rest = widgets.list_cluster_custom_object(
        G, V, P, _continue=status['metadata']['continue'])
    assert _seen(rest['items'])[0][:2] == ('default', 'x00')


def test_continue_after_its_snapshot_was_evicted(widgets):
    whole = widgets.list_cluster_custom_object(G, V, P)
    first = widgets.list_cluster_custom_object(G, V, P, limit=20)
    for i in range(20):   # other lists, each at another resourceVersion
        apitools.create(widgets, 'y%02d' % i)
        widgets.list_cluster_custom_object(G, V, P, limit=1)
    pages = _page_all(widgets, first, limit=20)
    items = first['items'] + [o for p in pages for o in p['items']]
    assert _seen(items) == _seen(whole['items'])


def test_exact_list_pages_at_its_version(widgets):
    rv = widgets.list_cluster_custom_object(G, V, P)['metadata'][
        'resourceVersion']
    old = widgets.list_cluster_custom_object(G, V, P)['items']
    widgets.delete_namespaced_custom_object(G, V, 'ns-a', P, 'w01')
    apitools.create(widgets, 'new')
    first = widgets.list_cluster_custom_object(
        G, V, P, limit=9, resource_version=rv,
        resource_version_match='Exact')
    pages = _page_all(widgets, first, limit=9)
    items = first['items'] + [o for p in pages for o in p['items']]
    assert _seen(items) == _seen(old)


def test_namespaced_selector_pages_continue_while_keys_follow(widgets):
    query = {'label_selector': 'tier=b', 'limit': 5}
    first = widgets.list_namespaced_custom_object(G, V, 'ns-b', P, **query)
    names = [o['metadata']['name'] for o in first['items']]
    page = first
    for _ in range(10):
        if not page['metadata']['continue']:
            break
        assert 'remainingItemCount' not in page['metadata']
        page = widgets.list_namespaced_custom_object(
            G, V, 'ns-b', P, _continue=page['metadata']['continue'], **query)
        names += [o['metadata']['name'] for o in page['items']]
    # w08, w20, w32, w44, w56 fill the first page; w59 (tier a) follows:
    # a continue, then an empty page.
    assert names == ['w%02d' % i for i in range(60)
                     if i % 3 == 2 and i % 4 == 0]
    assert page['items'] == []


class _Counting(dict):
    """A snapshot's objects, counting reads."""

    reads = 0

    def __getitem__(self, key):
        _Counting.reads += 1
        return super().__getitem__(key)


def test_a_continued_page_reads_only_its_objects(custom, simulator):
    store = simulator.store
    for i in range(3000):
        store.create(apitools.WIDGETS, apitools.widget('w%04d' % i))
    view = store.view

    def counting_view(rt, resource_version=None, keep=False):
        snap = view(rt, resource_version, keep)
        return type(snap)(snap.rv, snap.keys, _Counting(snap.objs))
    store.view = counting_view
    first = custom.list_cluster_custom_object(G, V, P, limit=50)
    _Counting.reads = 0
    second = custom.list_cluster_custom_object(
        G, V, P, limit=50, _continue=first['metadata']['continue'])
    assert _Counting.reads == 50
    assert second['metadata']['remainingItemCount'] == 2900
    assert second['items'][0]['metadata']['name'] == 'w0050'
