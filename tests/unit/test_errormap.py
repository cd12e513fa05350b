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

"""Kubernetes failures as Redfish errors (issue 12, item 4)."""

import pytest

from sushy_kubevirt import errormap
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources

SERVER = 'https://10.96.0.1:6443'


def unavailable():
    return apierrors.Unavailable(
        "cannot reach the Kubernetes API server at %s: PATCH /apis/x: "
        "HTTPSConnectionPool(host='10.96.0.1', port=6443): refused" % SERVER,
        server=SERVER).about('patch', resources.VM, 'default')


@pytest.mark.parametrize('exc, retry_after', [
    (unavailable(), '5'),
    (apierrors.TooManyRequests('Too many requests, please try again later.',
                               status=429, retry_after=2), '2'),
    (apierrors.ApiError('the server is currently unable to handle the '
                        'request', status=503, retry_after=0.2), '1'),
    (apierrors.ApiError('etcdserver: request timed out', status=504), '5'),
])
def test_unavailable_throttled_or_timed_out_is_503_retry_after(
        exc, retry_after):
    answer = errormap.from_kube(exc)
    assert answer.code == 503
    assert answer.message_id == 'ServiceTemporarilyUnavailable'
    assert answer.headers == {'Retry-After': retry_after}
    assert answer.message_args == [retry_after]
    assert '10.96.0.1' not in str(answer) and '6443' not in str(answer)


def test_unserved_api_is_503_not_a_missing_vm():
    """A plain ``404 page not found`` (no virt-api) is no missing VM."""
    exc = apierrors.from_response(
        404, b'404 page not found\n').about(
            'update', resources.VM_ACTIONS, 'lab', 'start')
    answer = errormap.from_kube(exc)
    assert (answer.code, answer.message_id) == (
        503, 'ServiceTemporarilyUnavailable')
    assert 'does not serve virtualmachines/start.subresources.kubevirt.io' \
        in str(answer)
    assert 'no longer exists' not in str(answer)


def test_missing_vm_is_404():
    exc = apierrors.from_response(404, (
        b'{"kind": "Status", "apiVersion": "v1", "status": "Failure", '
        b'"message": "virtualmachines.kubevirt.io \\"vm\\" not found", '
        b'"reason": "NotFound", "code": 404}')).about(
            'update', resources.VM_ACTIONS, 'lab', 'start')
    answer = errormap.from_kube(exc)
    assert answer.code == 404
    assert 'no longer exists' in str(answer)


def test_forbidden_names_the_missing_permission():
    exc = apierrors.Forbidden(
        'virtualmachines.subresources.kubevirt.io "vm" is forbidden: User '
        '"system:serviceaccount:bmc:sushy" cannot update resource '
        '"virtualmachines/start" in API group "subresources.kubevirt.io" '
        'in the namespace "lab"', status=403).about(
            'update', resources.VM_ACTIONS, 'lab', 'start')
    answer = errormap.from_kube(exc)
    assert (answer.code, answer.message_id) == (500, 'InternalError')
    assert "the emulator's Kubernetes service account lacks the RBAC " \
        'permission to update virtualmachines/start.subresources.' \
        'kubevirt.io in namespace lab' in str(answer)


def test_unreadable_namespace_is_503_with_the_reason():
    refused = apierrors.Forbidden('forbidden', status=403).about(
        'watch', resources.VM, 'lab')
    answer = errormap.from_kube(apierrors.Unreadable('x', refused, 'lab'))
    assert (answer.code, answer.headers) == (503, {'Retry-After': '5'})
    assert str(answer) == (
        "The systems in namespace lab cannot be read: the emulator's "
        'Kubernetes service account lacks the RBAC permission to watch '
        'virtualmachines.kubevirt.io in namespace lab')
    missing = apierrors.NotFound('namespaces "lab" not found', status=404)
    answer = errormap.from_kube(apierrors.Unreadable('x', missing, 'lab'))
    assert answer.code == 503
    assert str(answer) == (
        'The systems in namespace lab cannot be read: the namespace does '
        'not exist (SUSHY_EMULATOR_KUBEVIRT_NAMESPACES)')


@pytest.mark.parametrize('text', [
    'Internal error occurred: failed calling webhook "mutate.kubevirt.io": '
    'Post "https://virt-api.kubevirt.svc:443/mutate?timeout=10s": dial tcp '
    '10.96.12.7:443: connect: connection refused',
    'dial tcp [fd00::1]:6443: i/o timeout',
    'proxy localhost:8001 said no; host=api.lab.example.com:6443 port=6443',
])
def test_no_internal_address_in_any_message(text):
    for exc in (apierrors.ApiError(text, status=500),
                apierrors.Invalid(text, status=422),
                apierrors.Conflict(text, status=409),
                apierrors.NotFound(text, status=404)):
        answer = str(errormap.from_kube(exc))
        for address in ('10.96', 'fd00', 'svc:443', 'localhost', '6443',
                        'https://', 'example.com'):
            assert address not in answer, answer
        assert '<address>' in answer


def test_a_starting_authorizers_403_is_a_503_to_retry():
    """A 403 naming the bootstrap roles "not found" is no revocation."""
    exc = apierrors.from_response(403, (
        '{"kind": "Status", "code": 403, "reason": "Forbidden", "message": '
        '"virtualmachines.kubevirt.io \\"vm\\" is forbidden: User \\"u\\" '
        'cannot get resource \\"virtualmachines\\": RBAC: '
        '[clusterrole.rbac.authorization.k8s.io \\"system:discovery\\" not '
        'found, clusterrole.rbac.authorization.k8s.io \\"sushy-kubevirt\\" '
        'not found]"}'))
    assert isinstance(exc, apierrors.AuthorizerStarting)
    assert not isinstance(exc, apierrors.Forbidden)
    answer = errormap.from_kube(exc)
    assert (answer.code, answer.headers) == (503, {'Retry-After': '5'})
    assert 'is starting' in str(answer)
