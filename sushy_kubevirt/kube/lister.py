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

"""Reads of one informer: from its cache once synced, live before.

The rule of kubevirt-redfish PR #32: until the informer has finished its
first list, reads go to the API server and are counted as live; after
that the cache's answer is final, including "not found".

While the server refuses the informer's list or watch (403), before or
after it synced, every read raises
:class:`~sushy_kubevirt.kube.apierrors.Unreadable` naming the missing
permission, with no API call: neither a frozen cache nor an empty answer
is served. A warning is logged once per refusal, and the recovery once.

A list read before a cluster-wide informer synced waits for its first
list while that list progresses (a page at least every
:data:`LIST_PROGRESS_S`), then answers from the cache: a live list of
the same objects would end no sooner and cost as much again. Otherwise
it lists live, :data:`PAGE_SIZE` objects a page, keeping of each page
only what the informer would (client-go's pager).

A live read the server refuses before the informer synced counts as a
refusal too (:meth:`Lister.refusal`) until a live read succeeds or the
informer syncs, so that ``/metrics`` names the namespace the Systems
collection leaves out while the informer still waits to re-watch.
"""

import logging
import time

from sushy_kubevirt.kube import apierrors

LOG = logging.getLogger(__name__)

#: Seconds without a page after which a read stops waiting for a list.
LIST_PROGRESS_S = 10.0
#: Longest a read waits for the informer's first list, in seconds.
LIST_WAIT_S = 300.0
#: Objects a page of a live list (twice the informers': fewer requests
#: for a read that must answer at once; the benchmarks tell them apart).
PAGE_SIZE = 1000


def where(namespace):
    return 'namespace %s' % namespace if namespace else 'all namespaces'


class Lister:

    def __init__(self, informer, api, accounting, label_selector=None):
        self.informer = informer
        self.api = api
        self.accounting = accounting
        self.label_selector = label_selector
        self._plural = informer.resource.plural
        self._reported = False
        #: The 403 of the last live read, while the informer has not synced.
        self._live_refusal = None

    def refusal(self):
        """The server's 403 that makes this lister unreadable, or None."""
        refused = self.informer.refusal()
        if refused is None and not self.informer.has_synced():
            refused = self._live_refusal
        return refused

    def check(self):
        """Raise :class:`~apierrors.Unreadable` while the server refuses."""
        exc = self.informer.refusal()
        if exc is None:
            if self._reported and self.informer.has_synced():
                self._reported = False
                LOG.info('%s in %s are served again', self._plural,
                         where(self.informer.namespace))
            return
        raise self._unreadable(exc)

    def _unreadable(self, exc):
        namespace = self.informer.namespace
        if not self._reported:
            self._reported = True
            LOG.warning('%s in %s are not served until access is granted: '
                        '%s', self._plural, where(namespace), exc)
        return apierrors.Unreadable(
            'the API server refuses to %s' % (
                exc.permission() or 'read %s in %s' % (self._plural,
                                                       where(namespace))),
            exc, namespace)

    def _cached(self, verb):
        self.check()
        if self.informer.has_synced():
            self.accounting.cache(verb, self._plural)
            return True
        return False

    def _listed(self):
        """:meth:`_cached` of a list, once the list under way (if any) ends.

        A cluster-wide informer's first list, progressing, is waited for;
        one namespace's is short, and a read waiting for each of many
        namespaces in turn would wait for them all.
        """
        reflector = self.informer.reflector
        deadline = time.monotonic() + LIST_WAIT_S
        while self.informer.namespace is None and \
                not self.informer.has_synced() and \
                reflector.listing(LIST_PROGRESS_S) and \
                time.monotonic() < deadline:
            self.informer.wait_for_sync(0.05)
        return self._cached('list')

    def get(self, namespace, name):
        """The object, or None."""
        if self._cached('get'):
            return self.informer.get(namespace, name)
        try:
            if self.label_selector:
                # A GET would ignore the selector: list by name instead.
                found = self._live_list(namespace, 'metadata.name=' + name)
                found = found[0] if found else None
            else:
                found = self.informer.transform(
                    self.api.get(self.informer.resource, namespace, name))
        except apierrors.NotFound:
            found = None
        except apierrors.Forbidden as exc:
            raise self._refused(exc) from exc
        self._live_refusal = None
        return found

    def list(self):
        """Every object."""
        found = None if self._listed() else self._live_list_allowed()
        return self.informer.list() if found is None else found

    def by_index(self, index, value):
        """Objects whose ``index`` yields ``value``."""
        found = None if self._listed() else self._live_list_allowed()
        if found is None:
            return self.informer.by_index(index, value)
        values = self.informer.store.index_values
        return [o for o in found if value in values(index, o)]

    def _live_list_allowed(self):
        """A live list, or None once the informer synced meanwhile.

        The informer's list ending between two pages ends the live one:
        the rest is read from the cache (counted as a cache read).
        """
        try:
            found = self._live_list(self.informer.namespace, until_synced=True)
        except apierrors.Forbidden as exc:
            raise self._refused(exc) from exc
        self._live_refusal = None
        if found is None:
            self._cached('list')
        return found

    def _refused(self, exc):
        self._live_refusal = exc
        return self._unreadable(exc)

    def _live_list(self, namespace, field_selector=None,
                   until_synced=False):
        """What the informer would keep of a live list, page by page.

        An expired continue token (410) starts the list again, once. With
        ``until_synced``: None as soon as the informer has synced.
        """
        for attempt in (1, 2):
            items, token = [], None
            try:
                while True:
                    page = self.api.list(
                        self.informer.resource, namespace,
                        self.label_selector, field_selector=field_selector,
                        limit=PAGE_SIZE, continue_token=token)
                    items += self.informer.page(page.get('items') or [])
                    token = (page.get('metadata') or {}).get('continue')
                    if not token:
                        return items
                    if until_synced and self.informer.has_synced():
                        return None
            except apierrors.Gone:
                if token is None or attempt == 2:
                    raise
