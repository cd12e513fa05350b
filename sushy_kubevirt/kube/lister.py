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

While the server refuses the resource in this namespace (403), the
namespace is not served: reads answer None or nothing, with a warning
logged once and no API call, until the informer syncs.
"""

import logging

from sushy_kubevirt.kube import apierrors

LOG = logging.getLogger(__name__)


class Lister:

    def __init__(self, informer, api, accounting, label_selector=None):
        self.informer = informer
        self.api = api
        self.accounting = accounting
        self.label_selector = label_selector
        self._plural = informer.resource.plural
        self._refused = False

    def _cached(self, verb):
        if self.informer.has_synced():
            self._refused = False
            self.accounting.cache(verb, self._plural)
            return True
        return False

    def _is_refused(self):
        if not self._refused and self.informer.forbidden:
            self._refuse(self.informer.reflector.last_error)
        return self._refused

    def _refuse(self, exc):
        if not self._refused:
            self._refused = True
            LOG.warning('%s in %s are not served until access is granted: '
                        '%s', self._plural,
                        self.informer.namespace or 'all namespaces', exc)

    def get(self, namespace, name):
        """The object, or None."""
        if self._cached('get'):
            return self.informer.get(namespace, name)
        if self._is_refused():
            return None
        try:
            if self.label_selector:
                # A GET would ignore the selector: list by name instead.
                found = self._live_list(namespace, 'metadata.name=' + name)
                return found[0] if found else None
            return self.informer.transform(
                self.api.get(self.informer.resource, namespace, name))
        except apierrors.NotFound:
            return None
        except apierrors.Forbidden as exc:
            self._refuse(exc)
            return None

    def list(self):
        """Every object; nothing while the server answers 403."""
        if self._cached('list'):
            return self.informer.list()
        return self._live_list_allowed()

    def by_index(self, index, value):
        """Objects whose ``index`` yields ``value``."""
        if self._cached('list'):
            return self.informer.by_index(index, value)
        values = self.informer.store.index_values
        return [o for o in self._live_list_allowed()
                if value in values(index, o)]

    def _live_list_allowed(self):
        """A live list, or nothing (and no call) when forbidden."""
        if self._is_refused():
            return []
        try:
            return self._live_list(self.informer.namespace)
        except apierrors.Forbidden as exc:
            self._refuse(exc)
            return []

    def _live_list(self, namespace, field_selector=None):
        page = self.api.list(self.informer.resource, namespace,
                             self.label_selector,
                             field_selector=field_selector)
        return [self.informer.transform(o) for o in page.get('items') or []]
