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

"""One watch of labelled objects per label, resource and process."""

import types

import pytest

from sushy_kubevirt.accounts import labelwatch
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources


def cluster(name):
    return types.SimpleNamespace(settings=name, accounting=None)


@pytest.fixture(autouse=True)
def clean():
    labelwatch.stop()
    yield
    labelwatch.stop()


def test_one_watch_per_label_the_stale_one_stopped():
    sessions = labelwatch.shared(cluster('a'), 'ns', 'session')
    accounts = labelwatch.shared(cluster('a'), 'ns', 'account')
    assert labelwatch.shared(cluster('a'), 'ns', 'session') is sessions
    assert accounts is not sessions
    moved = labelwatch.shared(cluster('a'), 'other', 'session')
    assert moved is not sessions
    with pytest.raises(apierrors.Unavailable):
        sessions.synced()   # stopped: never started again
    assert labelwatch.shared(cluster('a'), 'ns', 'account') is accounts
    labelwatch.stop()
    with pytest.raises(apierrors.Unavailable):
        accounts.synced()
    assert labelwatch.shared(cluster('a'), 'ns', 'account') is not accounts


def test_another_resource_is_another_watch():
    secrets = labelwatch.shared(cluster('a'), 'ns', 'log')
    events = labelwatch.shared(cluster('a'), 'ns', 'log', resources.EVENT)
    assert events is not secrets
    assert (secrets.resource, events.resource) == (resources.SECRET,
                                                   resources.EVENT)
    assert labelwatch.shared(cluster('a'), 'ns', 'log') is secrets
