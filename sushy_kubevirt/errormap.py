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

"""Translate model and Kubernetes errors into sushy-tools errors.

sushy-tools renders a ``FishyError`` as a Redfish error body with the
exception's ``code`` as HTTP status. The choices:

* bad input (unknown reset type, boot target, mode, BIOS attribute; a
  device the VM does not have) -> 400;
* a valid ResetType KubeVirt cannot perform (Nmi, PowerCycle, ...) -> 400
  with Base ``ActionParameterNotSupported`` (the Reset action exists, so
  501 would be wrong);
* a reset that conflicts with a power transition in progress -> 409 with
  Base ``ActionParameterValueConflict``: Ironic's redfish power interface
  retries a power-on answered so (``[redfish]
  power_on_conflict_retry_attempts``, 6 x 10 s by default), and Ironic
  maps PoweringOff to "off", so "On right after ForceOff" is the case that
  needs it. Nothing else is retried by Ironic or sushy for a POST;
* a VM that disappeared -> 404; a write still conflicting after the
  guarded retries -> 409;
* Kubernetes refusing a request (403, RBAC) -> 500 Base
  ``InternalError`` whose message names the permission the emulator's
  service account lacks (verb, resource, namespace). Base
  ``InsufficientPrivilege`` (and a 403) would blame the Redfish client's
  credentials, which are fine: the service itself is misconfigured;
* admission rejecting a patch -> 400 with the webhook's message;
* the API server unreachable, throttling (429) or unavailable (503, 504)
  -> 503 Base ``ServiceTemporarilyUnavailable`` with ``Retry-After`` (the
  server's advice when it gave one, else ``RETRY_AFTER``), reads and
  writes alike;
* a namespace the watch cache cannot read (the API server refuses its
  list or watch, or it does not exist) -> 503 with ``Retry-After`` and
  the reason: the cache retries by itself and serves again within its
  backoff once the cause is fixed, so waiting is the right advice. A
  write refused (403) in a namespace whose VMs cannot be listed either
  (the namespace was made forbidden) is answered so too. The Systems
  collection lists the namespaces that can be read, and names each other
  one in a Base ``OperationFailed`` message (:func:`unlisted`).

No response names an internal address: the API server's host:port and
any URL or IP address in Kubernetes' messages (webhook endpoints...) are
replaced by ``<address>``; the log keeps them.
"""

import functools
import math
import re

from sushy_tools import error

from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import refusals
from sushy_kubevirt import messages

#: Seconds a client is told to wait when the API server gave no advice:
#: above the watch cache's backoff cap, so a retry finds it current.
RETRY_AFTER = 5

_ADDRESS = re.compile(
    r"[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+"      # URLs
    r"|\[[0-9a-fA-F:.]+\](?::\d+)?"               # [IPv6]:port
    r"|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"       # IPv4:port
    r"|\b(?:[a-zA-Z0-9-]+\.)+[a-zA-Z0-9-]+:\d+\b"   # host.name:port
    r"|\blocalhost(?::\d+)?\b"
    r"|\bport=\d+")


def scrub(text):
    """``text`` without URLs, IP addresses or host:port pairs."""
    return _ADDRESS.sub('<address>', str(text))


def busy(message, parameter='ResetType', value=''):
    """409 that Ironic retries for a power-on."""
    return messages.RedfishError('ActionParameterValueConflict', parameter,
                                 value, code=409, detail=message)


def from_model(exc):
    """The Redfish error of a model refusal.

    Its Base registry message when it names one with all its arguments,
    else GeneralError.
    """
    message_id = exc.message_id
    if messages.arity(message_id) != len(exc.message_args):
        message_id = 'GeneralError'
    return messages.RedfishError(
        message_id, *(exc.message_args if message_id != 'GeneralError'
                      else ()), code=exc.status, detail=str(exc))


def unavailable(detail, retry_after=None):
    """503 ServiceTemporarilyUnavailable with a ``Retry-After`` header."""
    seconds = RETRY_AFTER if retry_after is None else \
        max(1, int(math.ceil(retry_after)))
    return messages.RedfishError(
        'ServiceTemporarilyUnavailable', seconds, code=503, detail=detail,
        headers={'Retry-After': str(seconds)})


def _missing(permission):
    return ("the emulator's Kubernetes service account lacks the RBAC "
            'permission to %s' % permission)


def _api_of(exc):
    if exc.resource is None:
        return 'the API asked for'
    name = exc.resource.plural
    if exc.subresource:
        name += '/' + exc.subresource
    return '%s.%s' % (name, exc.resource.group) if exc.resource.group \
        else name


def _why_unreadable(exc):
    where = ('namespace %s' % exc.namespace if exc.namespace
             else 'all namespaces')
    cause = exc.cause
    if isinstance(cause, apierrors.Forbidden):
        reason = _missing(cause.permission() or 'read them')
    else:
        reason = 'the namespace does not exist (%sNAMESPACES)' % \
            config.PREFIX
    return where, reason


def _unreadable(exc):
    return unavailable('The systems in %s cannot be read: %s'
                       % _why_unreadable(exc))


def unlisted(exc):
    """The ``@Message.ExtendedInfo`` entry naming a namespace left out.

    For a collection that lists the systems of every namespace but the
    one of :class:`Unreadable` ``exc``: Base ``OperationFailed``
    (Warning: partial results were returned), its Resolution naming the
    namespace and why it is left out.
    """
    info = messages.message('OperationFailed')
    info['Resolution'] = (
        'The systems in %s are not listed: %s. They are listed again '
        'within seconds once that is fixed; retry then.'
        % _why_unreadable(exc))
    return info


def from_kube(exc):
    """The Redfish error for :class:`~apierrors.ApiError` ``exc``."""
    what = scrub(exc.message)
    if isinstance(exc, apierrors.Unreadable):
        return _unreadable(exc)
    if isinstance(exc, apierrors.Unavailable):
        return unavailable('The Kubernetes API server cannot be reached')
    if isinstance(exc, apierrors.TooManyRequests):
        return unavailable('The Kubernetes API server is throttling the '
                           'emulator: %s' % what, exc.retry_after)
    if isinstance(exc, apierrors.AuthorizerStarting):
        return unavailable('The Kubernetes API server is starting (its '
                           'RBAC authorizer is not ready yet)')
    if exc.status in (503, 504):
        return unavailable('The Kubernetes API server is unavailable: %s'
                           % what, exc.retry_after)
    if isinstance(exc, apierrors.NotFound) and exc.unserved:
        return unavailable('The Kubernetes API server does not serve %s '
                           '(is KubeVirt installed, with its virt-api '
                           'APIService available?): %s'
                           % (_api_of(exc), what))
    if isinstance(exc, apierrors.NotFound):
        return error.NotFound('The virtual machine no longer exists: %s'
                              % what)
    if isinstance(exc, apierrors.Conflict):
        return error.Conflict('The virtual machine kept changing during '
                              'the update; retry: %s' % what)
    if isinstance(exc, apierrors.Forbidden):
        return messages.RedfishError(
            'InternalError', code=500, detail='The Kubernetes API denied '
            'the request: %s (grant it in the Role of the service '
            'account): %s' % (_missing(exc.permission() or 'do it'), what))
    if isinstance(exc, apierrors.Invalid):
        return error.BadRequest('Kubernetes rejected the change: %s' % what)
    return messages.RedfishError('InternalError', code=500,
                                 detail='Kubernetes API error: %s' % what)


def translate(method):
    """Decorator: raise sushy-tools errors only."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except refusals.ModelError as exc:
            raise from_model(exc) from exc
        except apierrors.ApiError as exc:
            raise from_kube(exc) from exc
        except config.ConfigError as exc:
            raise messages.RedfishError('InternalError', code=500,
                                        detail=scrub(exc)) from exc
    return wrapper
