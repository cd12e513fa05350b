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

"""List: resourceVersion semantics, selectors and limit/continue paging.

A list reads one ``index.Snapshot`` of its type: the current state, or
the state at an exact resourceVersion or a continue token's (held for
the list's later pages, or rebuilt from history). A page is a range of
the snapshot's ordered keys after the token's start key, O(log N +
page). As etcd's range reads: with a selector a page scans keys until
``limit`` match, and carries a continue whenever keys follow (the next
page may be empty); ``remainingItemCount`` only without a selector.
"""

import base64
import json

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import encoding
from sushy_kubevirt.simulator import options
from sushy_kubevirt.simulator import selectors

INCONSISTENT_CONTINUE = (
    'The provided continue parameter is too old to display a consistent '
    'list result. You can start a new list without the continue '
    'parameter, or use the continue token in this response to retrieve '
    'the remainder of the results. Continuing with the provided token '
    'results in an inconsistent list - objects that were created, '
    'modified, or deleted between the time the first chunk was returned '
    'and now may show up in the list.')


def list_objects(api, req):
    """Return the list body as JSON text (items serialised once)."""
    q = req.query
    rt = req.rt
    options.check_list(q)
    match = selectors.matcher(q.get('labelSelector'),
                              q.get('fieldSelector'), rt)
    limit = options.int_param(q, 'limit')
    snap, start, limit = _source(api, req, limit)
    lo, hi = snap.bounds(req.namespace, start)
    keys, objs = snap.keys, snap.objs
    items, at = [], lo
    while at < hi and not (limit and len(items) == limit):
        obj = objs[keys[at]]
        at += 1
        if match is None or match(obj):
            items.append(obj)
    meta = {'resourceVersion': str(snap.rv)}
    if rt.custom:   # an unstructured list always carries continue
        meta['continue'] = ''
    if limit and len(items) == limit and at < hi:
        # More keys follow (matching or not): a continue, as etcd's and
        # the watch cache's range reads give; the next page may be empty.
        meta['continue'] = _encode_continue(snap.rv, keys[at - 1])
        if match is None:
            meta['remainingItemCount'] = hi - at
    head = encoding.compact({'apiVersion': rt.api_version,
                             'kind': rt.kind + 'List', 'metadata': meta})
    if rt.custom:
        texts = (api.json_cache.dumps(o) for o in items)
    else:   # typed list items carry no apiVersion and kind
        texts = (encoding.compact({k: v for k, v in o.items()
                                   if k not in ('apiVersion', 'kind')})
                 for o in items)
    return ''.join((head[:-1], ',"items":[', ','.join(texts), ']}'))


def _source(api, req, limit):
    """(snapshot, start key or None, limit) the list reads."""
    q = req.query
    store = api.store
    rv = q.get('resourceVersion', '')
    rv_match = q.get('resourceVersionMatch', '')
    token = q.get('continue')
    if token:
        at_rv, start = _decode_continue(token)
        if at_rv < store.compacted_resource_version:
            raise apistatus.ApiError(
                410, 'Expired', INCONSISTENT_CONTINUE,
                metadata={'continue': _encode_continue(
                    store.resource_version, start)})
        return store.view(req.rt, at_rv, keep=True), start, limit
    if rv_match == 'Exact' or (rv not in ('', '0') and limit and
                               not rv_match):
        return store.view(req.rt, options.parse_rv(rv), keep=True), None, \
            limit
    if rv not in ('', '0'):
        wanted = options.parse_rv(rv)
        if not store.wait_for_rv(wanted, api.sim.too_large_wait):
            raise apistatus.too_large_resource_version(
                wanted, store.resource_version)
    if rv == '':
        store.sync_type(req.rt)   # a consistent read from the cache
    if rv == '0':
        limit = 0
    return store.view(req.rt, keep=bool(limit)), None, limit


def _encode_continue(rv, key):
    doc = {'v': 'meta.k8s.io/v1', 'rv': rv,
           'start': '%s/%s\x00' % key}
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode()


def _decode_continue(token):
    try:
        doc = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, _, name = doc['start'].rstrip('\x00').partition('/')
        return int(doc['rv']), (namespace, name)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise apistatus.bad_request(
            'invalid continue token: continue key is not valid: incorrect '
            'encoded start resourceVersion (version meta.k8s.io/v1)')
