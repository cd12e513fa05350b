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

"""Kubernetes ``Status`` errors with kube-apiserver's reasons and messages."""

import contextlib
import json


class ApiError(Exception):
    """An error answered as a kube ``Status`` (or plain text for APF)."""

    def __init__(self, code, reason, message, details=None, causes=None,
                 headers=None, plain_text=False, metadata=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details or {})
        if causes:
            self.details['causes'] = list(causes)
        self.headers = dict(headers or {})
        self.plain_text = plain_text
        self.metadata = dict(metadata or {})

    def to_status(self):
        """The ``Status`` object kube-apiserver would send."""
        status = {'kind': 'Status', 'apiVersion': 'v1',
                  'metadata': dict(self.metadata), 'status': 'Failure',
                  'message': self.message}
        if self.reason:
            status['reason'] = self.reason
        details = {k: v for k, v in self.details.items() if v}
        if details or self.reason == 'Invalid':
            status['details'] = details
        status['code'] = self.code
        return status

    def body(self):
        """Response bytes and content type."""
        if self.plain_text:
            return self.message.encode(), 'text/plain; charset=utf-8'
        return json.dumps(self.to_status()).encode(), 'application/json'


@contextlib.contextmanager
def ignoring(*codes):
    """Swallow ApiErrors with these codes (a controller's benign race)."""
    try:
        yield
    except ApiError as exc:
        if exc.code not in codes:
            raise


def qualified_resource(rt):
    """``plural.group`` (``plural`` for the core group)."""
    return '%s.%s' % (rt.plural, rt.group) if rt.group else rt.plural


def _details(rt, name):
    return {'name': name, 'group': rt.group, 'kind': rt.plural}


def not_found(rt, name):
    return ApiError(404, 'NotFound', '%s "%s" not found'
                    % (qualified_resource(rt), name), _details(rt, name))


def already_exists(rt, name):
    return ApiError(409, 'AlreadyExists', '%s "%s" already exists'
                    % (qualified_resource(rt), name), _details(rt, name))


def conflict(rt, name, detail=None):
    detail = detail or ('the object has been modified; please apply your '
                        'changes to the latest version and try again')
    return ApiError(409, 'Conflict', 'Operation cannot be fulfilled on '
                    '%s "%s": %s' % (qualified_resource(rt), name, detail),
                    _details(rt, name))


def precondition_failed(rt, name, detail):
    """409 for a delete precondition (the registry names the kind)."""
    kind = '%s.%s' % (rt.kind, rt.group) if rt.group else rt.kind
    return ApiError(409, 'Conflict', 'Operation cannot be fulfilled on '
                    '%s "%s": %s' % (kind, name, detail),
                    {'name': name, 'group': rt.group, 'kind': rt.kind})


def field_cause(field, reason, message):
    """One ``StatusCause``; ``message`` is the body after the field."""
    return {'reason': reason, 'message': message, 'field': field}


def invalid_value(field, value, detail):
    """A ``FieldValueInvalid`` cause, formatted like field.Invalid."""
    return field_cause(field, 'FieldValueInvalid',
                       'Invalid value: %s: %s' % (value, detail))


def forbidden_field(field, detail):
    return field_cause(field, 'FieldValueForbidden', 'Forbidden: ' + detail)


def not_supported(field, value, supported):
    return field_cause(field, 'FieldValueNotSupported',
                       'Unsupported value: %s: supported values: %s'
                       % (json.dumps(value),
                          ', '.join(json.dumps(s) for s in supported)))


def invalid(kind, name, causes, group=None):
    """422 Invalid; ``kind`` is a ResourceType or a kind name."""
    if not isinstance(kind, str):
        group = kind.group if group is None else group
        kind = kind.kind
    group = group or ''
    qualified = '%s.%s' % (kind, group) if group else kind
    errors = ['%s: %s' % (c['field'], c['message']) if c.get('field')
              else c['message'] for c in causes]
    errors = list(dict.fromkeys(errors))  # field.ErrorList.ToAggregate
    text = errors[0] if len(errors) == 1 else '[%s]' % ', '.join(errors)
    return ApiError(422, 'Invalid', '%s "%s" is invalid: %s'
                    % (qualified, name, text),
                    {'name': name, 'group': group, 'kind': kind},
                    causes=causes)


def resource_version_required(rt, name):
    """422 for a PUT without metadata.resourceVersion.

    The registry store builds this GroupKind from the resource, not the
    kind: ``virtualmachines.kubevirt.io "x" is invalid: ...``.
    """
    return invalid(rt.plural, name, [invalid_value(
        'metadata.resourceVersion', '0',
        'must be specified for an update')], group=rt.group)


def strict_decoding(rt, messages):
    """400 for unknown fields in a create or update with Strict."""
    return bad_request('%s in version "%s" cannot be handled as a %s: '
                       'strict decoding error: %s'
                       % (rt.kind, rt.version, rt.kind,
                          ', '.join(messages)))


def strict_patch(patched_json, messages):
    """422 for unknown fields in a JSON or merge patch with Strict."""
    # Go encodes the unstructured object with sorted keys.
    compact = json.dumps(patched_json, separators=(',', ':'), sort_keys=True)
    return invalid('', '', [invalid_value(
        'patch', json.dumps(compact),
        'strict decoding error: ' + ', '.join(messages))])


def patch_not_decoded(detail):
    """400 for a patch body that does not decode."""
    return bad_request('error decoding patch: ' + detail)


def patch_not_applied():
    """422 answered when a JSON patch (e.g. a ``test``) does not apply."""
    return ApiError(422, 'Invalid', 'the server rejected our request due '
                    'to an error in our request')


def gone(message):
    return ApiError(410, 'Expired', message)


def forbidden(user, verb, rt, namespace=None, name='', subresource=''):
    resource = rt.plural + ('/' + subresource if subresource else '')
    scope = ('in the namespace "%s"' % namespace if namespace
             else 'at the cluster scope')
    reason = 'User "%s" cannot %s resource "%s" in API group "%s" %s' % (
        user, verb, resource, rt.group, scope)
    subject = qualified_resource(rt)
    head = '%s "%s"' % (subject, name) if name else subject
    return ApiError(403, 'Forbidden', '%s is forbidden: %s' % (head, reason),
                    _details(rt, name))


def unauthorized():
    return ApiError(401, 'Unauthorized', 'Unauthorized')


def bad_request(message):
    return ApiError(400, 'BadRequest', message)


def method_not_supported(rt, action):
    return ApiError(405, 'MethodNotAllowed',
                    '%s is not supported on resources of kind "%s"'
                    % (action, qualified_resource(rt)),
                    {'group': rt.group, 'kind': rt.plural})


def unsupported_media_type(accepted):
    return ApiError(415, 'UnsupportedMediaType',
                    'the body of the request was in an unknown format - '
                    'accepted media types include: ' + ', '.join(accepted))


def too_many_requests(retry_after=1):
    """APF's 429: plain text with ``Retry-After``."""
    return ApiError(429, 'TooManyRequests',
                    'Too many requests, please try again later.\n',
                    headers={'Retry-After': str(retry_after),
                             'X-Kubernetes-PF-FlowSchema-UID': 'sim-flow',
                             'X-Kubernetes-PF-PriorityLevel-UID': 'sim-pl'},
                    plain_text=True)


def timeout(message, retry_after=0):
    return ApiError(504, 'Timeout', 'Timeout: ' + message,
                    {'retryAfterSeconds': retry_after})


def too_large_resource_version(requested, current):
    """504 for a resourceVersion the server has not reached."""
    return ApiError(504, 'Timeout', 'Timeout: Too large resource version: '
                    '%d, current: %d' % (requested, current),
                    {'retryAfterSeconds': 1},
                    causes=[{'reason': 'ResourceVersionTooLarge',
                             'message': 'Too large resource version'}])


def internal(message):
    return ApiError(500, 'InternalError',
                    'Internal error occurred: ' + message,
                    causes=[{'message': message}])


def from_code(code, message=None):
    """A plausible Status for a forced status code (fault injection)."""
    reasons = {400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden',
               404: 'NotFound', 405: 'MethodNotAllowed', 409: 'Conflict',
               410: 'Expired', 415: 'UnsupportedMediaType', 422: 'Invalid',
               500: 'InternalError', 503: 'ServiceUnavailable',
               504: 'Timeout'}
    if code == 429:
        return too_many_requests()
    return ApiError(code, reasons.get(code, 'Unknown'),
                    message or 'injected fault: HTTP %d' % code)
