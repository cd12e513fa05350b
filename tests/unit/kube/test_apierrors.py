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

import json

from kubernetes.client import exceptions as k8s_exceptions

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import resources


def status(code, reason, message, **extra):
    return json.dumps(dict(kind='Status', apiVersion='v1', status='Failure',
                           code=code, reason=reason, message=message,
                           **extra))


def test_classes_by_status():
    for code, cls in ((403, apierrors.Forbidden), (404, apierrors.NotFound),
                      (409, apierrors.Conflict), (410, apierrors.Gone),
                      (422, apierrors.Invalid), (500, apierrors.ApiError)):
        exc = apierrors.from_response(code, status(code, 'X', 'boom'))
        assert type(exc) is cls
        assert exc.status == code
        assert exc.message == 'boom'


def test_failed_json_patch_test_is_conflict():
    exc = apierrors.from_response(
        422, status(422, 'Invalid', 'the server rejected our request due to '
                    'an error in our request: testing value '
                    '/metadata/resourceVersion failed: test failed'))
    assert isinstance(exc, apierrors.Conflict)


def test_plain_text_429_with_retry_after():
    exc = apierrors.from_response(
        429, b'Too many requests, please try again later.\n',
        {'Retry-After': '3'})
    assert isinstance(exc, apierrors.TooManyRequests)
    assert exc.retry_after == 3.0
    assert exc.message == 'Too many requests, please try again later.'


def test_status_retry_after_seconds():
    exc = apierrors.from_status({'code': 429, 'reason': 'TooManyRequests',
                                 'message': 'slow down',
                                 'details': {'retryAfterSeconds': 2}})
    assert exc.retry_after == 2.0


def test_watch_error_event_status():
    exc = apierrors.from_status({'kind': 'Status', 'code': 410,
                                 'reason': 'Expired',
                                 'message': 'too old resource version: 1 (5)'})
    assert isinstance(exc, apierrors.Gone)
    assert exc.reason == 'Expired'


def test_from_api_exception():
    api_exc = k8s_exceptions.ApiException(status=404, reason='Not Found')
    api_exc.body = status(404, 'NotFound', 'vm "x" not found',
                          details={'name': 'x'})
    exc = apierrors.from_exception(api_exc)
    assert isinstance(exc, apierrors.NotFound)
    assert exc.details == {'name': 'x'}


def test_api_exception_without_status_is_unavailable():
    exc = apierrors.from_exception(
        k8s_exceptions.ApiException(status=0, reason='SSLError'))
    assert isinstance(exc, apierrors.Unavailable)


def test_too_large_resource_version():
    cause = apierrors.from_response(504, status(
        504, 'Timeout', 'Timeout: Too large resource version: 12, '
        'current: 11', details={'retryAfterSeconds': 1, 'causes': [
            {'reason': 'ResourceVersionTooLarge',
             'message': 'Too large resource version'}]}))
    old_server = apierrors.from_response(504, status(
        504, 'Timeout', 'Too large resource version: 12, current: 11'))
    plain = apierrors.from_response(504, status(504, 'Timeout', 'timed out'))
    assert apierrors.too_large(cause) and apierrors.too_large(old_server)
    assert not apierrors.too_large(plain)
    assert not apierrors.too_large(
        apierrors.Gone('too large resource version'))


def test_permission_names_verb_resource_and_where():
    exc = apierrors.Forbidden('no', status=403)
    assert exc.permission() is None
    assert exc.about('list', resources.VM, 'lab') is exc
    assert exc.permission() == \
        'list virtualmachines.kubevirt.io in namespace lab'
    assert exc.about('watch', resources.VMI).permission() == \
        'watch virtualmachineinstances.kubevirt.io in all namespaces'
    assert exc.about('get', resources.NAMESPACE).permission() == \
        'get namespaces at the cluster scope'
    assert exc.about('update', resources.VM_ACTIONS, 'lab',
                     'start').permission() == \
        'update virtualmachines/start.subresources.kubevirt.io in ' \
        'namespace lab'
    assert exc.about('create', resources.SECRET, 'lab').permission() == \
        'create secrets in namespace lab'
