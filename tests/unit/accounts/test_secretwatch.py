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

"""One watch of labelled Secrets per label and process."""

import types

import pytest

from sushy_kubevirt.accounts import secretwatch
from sushy_kubevirt.kube import apierrors


def cluster(name):
    return types.SimpleNamespace(settings=name, accounting=None)


@pytest.fixture(autouse=True)
def clean():
    secretwatch.stop()
    yield
    secretwatch.stop()


def test_one_watch_per_label_the_stale_one_stopped():
    sessions = secretwatch.shared(cluster('a'), 'ns', 'session')
    accounts = secretwatch.shared(cluster('a'), 'ns', 'account')
    assert secretwatch.shared(cluster('a'), 'ns', 'session') is sessions
    assert accounts is not sessions
    moved = secretwatch.shared(cluster('a'), 'other', 'session')
    assert moved is not sessions
    with pytest.raises(apierrors.Unavailable):
        sessions.synced()   # stopped: never started again
    assert secretwatch.shared(cluster('a'), 'ns', 'account') is accounts
    secretwatch.stop()
    with pytest.raises(apierrors.Unavailable):
        accounts.synced()
    assert secretwatch.shared(cluster('a'), 'ns', 'account') is not accounts
