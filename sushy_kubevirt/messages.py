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

"""Redfish error bodies with DMTF Base registry messages.

:class:`RedfishError` is a sushy-tools ``FishyError`` that names a Base
registry ``MessageId`` and its arguments; :func:`body` renders any error
as the Redfish error response (``error.code`` and
``@Message.ExtendedInfo`` carry the real MessageId). Errors raised by
sushy-tools itself (plain ``FishyError``) and werkzeug's HTTP errors get
the MessageId their status code implies.

The message texts are those of the DMTF Base registry (DSP8011); sushy
ships only Base 1.4.0, which lacks several we use (``PreconditionFailed``,
``OperationNotAllowed``), so the few we answer with are listed here.
"""

from sushy_tools import error

#: Registry prefix and version of every MessageId we answer with.
REGISTRY = 'Base.1.16'

# MessageId -> (Severity, message template with %1.., Resolution).
_MESSAGES = {
    'GeneralError': (
        'Critical', 'A general error has occurred. See Resolution for '
        'information on how to resolve the error.', 'None.'),
    'InternalError': (
        'Critical', 'The request failed due to an internal service error. '
        ' The service is still operational.', 'Resubmit the request.  If '
        'the problem persists, consider resetting the service.'),
    'MalformedJSON': (
        'Critical', 'The request body submitted was malformed JSON and '
        'could not be parsed by the receiving service.', 'Ensure that the '
        'request body is valid JSON and resubmit the request.'),
    'NoOperation': (
        'Warning', 'The request body submitted contain no data to act upon '
        'and no changes to the resource took place.', 'Add properties in '
        'the JSON object and resubmit the request.'),
    'PropertyUnknown': (
        'Warning', "The property %1 is not in the list of valid properties "
        "for the resource.", 'Remove the unknown property from the request '
        'body and resubmit the request if the operation failed.'),
    'PropertyNotWritable': (
        'Warning', 'The property %1 is a read-only property and cannot be '
        'assigned a value.', 'Remove the property from the request body '
        'and resubmit the request if the operation failed.'),
    'PropertyValueNotInList': (
        'Warning', "The value '%1' for the property %2 is not in the list "
        "of acceptable values.", 'Choose a value from the enumeration list '
        'that the implementation can support and resubmit the request if '
        'the operation failed.'),
    'PropertyValueTypeError': (
        'Warning', "The value '%1' for the property %2 is not a type that "
        "the property can accept.", 'Correct the value for the property in '
        'the request body and resubmit the request if the operation '
        'failed.'),
    'PropertyValueFormatError': (
        'Warning', "The value '%1' for the property %2 is not a format "
        "that the property can accept.", 'Correct the value for the '
        'property in the request body and resubmit the request if the '
        'operation failed.'),
    'PropertyValueOutOfRange': (
        'Warning', "The value '%1' for the property %2 is not in the "
        "supported range of acceptable values.", 'Correct the value for '
        'the property in the request body and resubmit the request if the '
        'operation failed.'),
    'PropertyMissing': (
        'Warning', 'The property %1 is a required property and must be '
        'included in the request.', 'Ensure that the property is in the '
        'request body and has a valid value and resubmit the request if '
        'the operation failed.'),
    'StringValueTooLong': (
        'Warning', "The string '%1' exceeds the length limit %2.",
        'Resubmit the request with an appropriate string length.'),
    'ArraySizeTooLong': (
        'Warning', 'The array provided for property %1 exceeds the size '
        'limit %2.', 'Resubmit the request with an appropriate array '
        'size.'),
    'EventSubscriptionLimitExceeded': (
        'Critical', 'The event subscription failed due to the number of '
        'simultaneous subscriptions exceeding the limit of the '
        'implementation.', 'Reduce the number of other subscriptions '
        'before trying to establish the event subscription or increase '
        'the limit of simultaneous subscriptions (if supported).'),
    'ActionNotSupported': (
        'Critical', 'The action %1 is not supported by the resource.',
        'The action supplied cannot be resubmitted to the implementation.  '
        'Perhaps the action was invalid, the wrong resource was the target '
        'or the implementation documentation may be of assistance.'),
    'ActionParameterMissing': (
        'Critical', 'The action %1 requires the parameter %2 to be present '
        'in the request body.', 'Supply the action with the required '
        'parameter in the request body when the request is resubmitted.'),
    'ActionParameterUnknown': (
        'Warning', 'The action %1 was submitted with the invalid parameter '
        '%2.', 'Correct the invalid parameter and resubmit the request if '
        'the operation failed.'),
    'ActionParameterNotSupported': (
        'Warning', 'The parameter %1 for the action %2 is not supported on '
        'the target resource.', 'Remove the parameter supplied and resubmit '
        'the request if the operation failed.'),
    'ActionParameterValueNotInList': (
        'Warning', "The value '%1' for the parameter %2 in the action %3 is "
        "not in the list of acceptable values.", 'Choose a value from the '
        'enumeration list that the implementation can support and resubmit '
        'the request if the operation failed.'),
    'ActionParameterValueTypeError': (
        'Warning', "The value '%1' for the parameter %2 in the action %3 is "
        "not a type that the parameter can accept.", 'Correct the value for '
        'the parameter in the request body and resubmit the request if the '
        'operation failed.'),
    'ActionParameterValueFormatError': (
        'Warning', "The value '%1' for the parameter %2 in the action %3 is "
        "not a format that the parameter can accept.", 'Correct the value '
        'for the parameter in the request body and resubmit the request if '
        'the operation failed.'),
    'ActionParameterValueConflict': (
        'Warning', "The parameter '%1' with the requested value of '%2' "
        "does not meet the constraints of the implementation.", 'No '
        'resolution is required.'),
    'PropertyValueConflict': (
        'Warning', "The property '%1' could not be written because its "
        "value would conflict with the value of the '%2' property.",
        'No resolution is required.'),
    'ResourceNotFound': (
        'Critical', "The requested resource of type %1 named '%2' was not "
        "found.", 'Provide a valid resource identifier and resubmit the '
        'request.'),
    'ResourceAlreadyExists': (
        'Critical', "The requested resource of type %1 with the property "
        "%2 with the value '%3' already exists.", 'Do not repeat the '
        'create operation as the resource has already been created.'),
    'ResourceInUse': (
        'Warning', 'The change to the requested resource failed because '
        'the resource is in use or in transition.', 'Remove the condition '
        'and resubmit the request if the operation failed.'),
    'OperationNotAllowed': (
        'Critical', 'The HTTP method is not allowed on this resource.',
        'None.'),
    'PreconditionFailed': (
        'Critical', 'The ETag supplied did not match the ETag required to '
        'change this resource.', 'Try the operation again using the '
        'appropriate ETag.'),
    'InsufficientPrivilege': (
        'Critical', 'There are insufficient privileges for the account or '
        'credentials associated with the current session to perform the '
        'requested operation.', 'Either abandon the operation or change '
        'the associated access rights and resubmit the request if the '
        'operation failed.'),
    'NoValidSession': (
        'Critical', 'There is no valid session established with the '
        'implementation.', 'Establish a session before attempting any '
        'operations.'),
    'OperationFailed': (
        'Warning', 'An error occurred internal to the service as part of '
        'the overall request.  Partial results may have been returned.',
        'Resubmit the request.  If the problem persists, consider '
        'resetting the service or provider.'),
    'SessionLimitExceeded': (
        'Critical', 'The session establishment failed due to the number of '
        'simultaneous sessions exceeding the limit of the implementation.',
        'Reduce the number of other sessions before trying to establish the '
        'session or increase the limit of simultaneous sessions (if '
        'supported).'),
    'ServiceTemporarilyUnavailable': (
        'Critical', 'The service is temporarily unavailable.  Retry in %1 '
        'seconds.', 'Wait for the indicated retry duration and retry the '
        'operation.'),
    'QueryNotSupported': (
        'Warning', 'Querying is not supported by the implementation.',
        'Remove the query parameters and resubmit the request if the '
        'operation failed.'),
    'QueryNotSupportedOnResource': (
        'Warning', 'Querying is not supported on the requested resource.',
        'Remove the query parameters and resubmit the request if the '
        'operation failed.'),
    'QueryParameterValueTypeError': (
        'Warning', "The value '%1' for the query parameter %2 is not a type "
        'that the parameter can accept.', 'Correct the value for the query '
        'parameter in the request and resubmit the request if the '
        'operation failed.'),
    'QueryParameterValueFormatError': (
        'Warning', "The value '%1' for the parameter %2 is not a format "
        'that the parameter can accept.', 'Correct the value for the query '
        'parameter in the request and resubmit the request if the '
        'operation failed.'),
    'QueryParameterOutOfRange': (
        'Warning', "The value '%1' for the query parameter %2 is out of "
        'range %3.', 'Reduce the value for the query parameter to a value '
        'that is within range, such as a start or count value that is '
        'within bounds of the number of resources in a collection or a '
        'page that is within the range of valid pages.'),
}

# The MessageId an error without one implies, by HTTP status.
_BY_STATUS = {
    401: 'NoValidSession',
    403: 'InsufficientPrivilege',
    404: 'ResourceNotFound',
    405: 'OperationNotAllowed',
    409: 'ResourceInUse',
    412: 'PreconditionFailed',
    500: 'InternalError',
    501: 'ActionNotSupported',
    503: 'ServiceTemporarilyUnavailable',
}


class RedfishError(error.FishyError):
    """A FishyError that names its Base registry message.

    :param message_id: a key of the Base registry (e.g. ``MalformedJSON``).
    :param args: the message arguments (%1, %2, ...), as strings.
    :param code: the HTTP status.
    :param detail: what went wrong, for humans (``error.message``); the
        registry text when omitted.
    :param properties: JSON pointers of the request properties at fault
        (``RelatedProperties``).
    :param headers: extra response headers (``Retry-After``, ``Allow``).
    """

    def __init__(self, message_id, *args, code=400, detail=None,
                 properties=(), headers=None):
        if message_id not in _MESSAGES:
            raise ValueError('no Base registry message %r' % message_id)
        self.message_id = message_id
        self.message_args = [str(arg) for arg in args]
        self.properties = list(properties)
        self.headers = dict(headers or {})
        super().__init__(detail or text(message_id, *self.message_args),
                         code)


def arity(message_id):
    """How many arguments (%1, %2, ...) message ``message_id`` takes."""
    template = _MESSAGES[message_id][1]
    count = 0
    while '%%%d' % (count + 1) in template:
        count += 1
    return count


def text(message_id, *args):
    """The registry message ``message_id`` with its arguments filled in."""
    template = _MESSAGES[message_id][1]
    for index in range(len(args), 0, -1):
        template = template.replace('%%%d' % index, str(args[index - 1]))
    return template


def message(message_id, *args, properties=()):
    """One ``Message`` object of ``@Message.ExtendedInfo``."""
    severity, _, resolution = _MESSAGES[message_id]
    result = {
        '@odata.type': '#Message.v1_1_1.Message',
        'MessageId': '%s.%s' % (REGISTRY, message_id),
        'Message': text(message_id, *args),
        'MessageArgs': [str(arg) for arg in args],
        'MessageSeverity': severity,
        'Resolution': resolution,
    }
    if properties:
        result['RelatedProperties'] = list(properties)
    return result


def body(exc, code, path=''):
    """The Redfish error response body for exception ``exc``.

    ``path``: the request's, named by a ResourceNotFound or
    ActionNotSupported message.
    """
    message_id = getattr(exc, 'message_id', None)
    args = getattr(exc, 'message_args', ())
    if message_id is None:
        message_id = _BY_STATUS.get(code, 'GeneralError')
        args = {'ResourceNotFound': ('Resource', path),
                'ActionNotSupported': (path,),
                'ServiceTemporarilyUnavailable': (
                    getattr(exc, 'headers', {}).get('Retry-After', 1),)
                }.get(message_id, ())
    info = message(message_id, *args,
                   properties=getattr(exc, 'properties', ()))
    detail = getattr(exc, 'description', None) or str(exc)
    return {'error': {'code': info['MessageId'], 'message': detail,
                      '@Message.ExtendedInfo': [info]}}
