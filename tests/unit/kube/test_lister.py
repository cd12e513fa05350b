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

"""Lister: a live read refused before the informer synced is a refusal."""

import pytest

from sushy_kubevirt.kube import accounting
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import dispatcher
from sushy_kubevirt.kube import informer
from sushy_kubevirt.kube import lister
from sushy_kubevirt.kube import resources


class Api:
    """Live lists that answer ``self.answer`` (raised when an error)."""

    answer = None

    def list(self, resource, namespace, label_selector, field_selector=None,
             limit=None, continue_token=None):
        if isinstance(self.answer, Exception):
            raise self.answer
        return {'items': self.answer}


def test_a_refused_live_list_counts_until_a_read_succeeds_or_sync():
    cache = informer.Informer(None, resources.VM, dispatcher.Dispatcher(),
                              namespace='ns-1')
    api = Api()
    reader = lister.Lister(cache, api, accounting.Accounting())
    assert reader.refusal() is None
    api.answer = apierrors.Forbidden('forbidden', status=403)
    with pytest.raises(apierrors.Unreadable):
        reader.list()
    assert reader.refusal() is api.answer
    api.answer = []
    assert reader.list() == []
    assert reader.refusal() is None
    api.answer = apierrors.Forbidden('forbidden', status=403)
    with pytest.raises(apierrors.Unreadable):
        reader.list()
    # Once synced the informer's own refusal is the one that counts.
    cache._replace([], '1')
    assert reader.refusal() is None
