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

"""resets.perform: virt-api's answers to a subresource call."""

from unittest import mock

import pytest

from sushy_kubevirt.drivers import resets
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import power

START = power.Call('vm', 'start', {})


def _cluster(exc):
    cluster = mock.Mock()
    cluster.vm_subresource.side_effect = exc
    return cluster


def test_virt_apis_lost_patch_race_is_a_conflict():
    # The real virt-api's 500 when a concurrent change failed the test of
    # its own JSON patch (found by test_concurrency on the real KubeVirt).
    cluster = _cluster(apierrors.ApiError(
        'Internal error occurred: the server rejected our request due to '
        'an error in our request', status=500, reason='InternalError'))
    with pytest.raises(apierrors.Conflict) as caught:
        resets.perform(cluster, 'default', 'vm', START)
    assert caught.value.status == 409
    assert 'changed during the start' in caught.value.message


def test_other_internal_errors_stay_errors():
    error = apierrors.ApiError('Internal error occurred: etcd is down',
                               status=500, reason='InternalError')
    with pytest.raises(apierrors.ApiError) as caught:
        resets.perform(_cluster(error), 'default', 'vm', START)
    assert caught.value is error
