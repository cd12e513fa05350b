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
* Kubernetes refusing us (403, RBAC) -> 500: the emulator's service
  account lacks a permission, not the Redfish client (a 403 would send
  the operator to the BMC credentials); admission rejecting a patch ->
  400 with the webhook's message; API server unreachable or throttling
  -> 503.
"""

import functools

from sushy_tools import error

from sushy_kubevirt import config
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import refusals

VALUE_CONFLICT = 'Base.1.0.ActionParameterValueConflict'
NOT_SUPPORTED = 'Base.1.0.ActionParameterNotSupported'


def busy(message):
    """409 that Ironic retries for a power-on."""
    return error.Conflict('%s (%s)' % (message, VALUE_CONFLICT))


def from_model(exc):
    if isinstance(exc, refusals.TransitionInProgress):
        return busy(str(exc))
    if isinstance(exc, refusals.NotSupported):
        return error.BadRequest('%s (%s)' % (exc, NOT_SUPPORTED))
    if exc.status == 400:
        return error.BadRequest(str(exc))
    return error.FishyError(str(exc), exc.status)


def from_kube(exc):
    what = str(exc)
    if isinstance(exc, apierrors.NotFound):
        return error.NotFound('The virtual machine no longer exists: %s'
                              % what)
    if isinstance(exc, apierrors.Conflict):
        return error.Conflict('The virtual machine kept changing during '
                              'the update; retry: %s' % what)
    if isinstance(exc, apierrors.Forbidden):
        return error.FishyError(
            'The Kubernetes API denied the emulator (check the RBAC of its '
            'service account): %s' % what, 500)
    if isinstance(exc, apierrors.Invalid):
        return error.BadRequest('Kubernetes rejected the change: %s' % what)
    if isinstance(exc, (apierrors.Unavailable, apierrors.TooManyRequests)):
        return error.FishyError('The Kubernetes API is unavailable: %s'
                                % what, 503)
    return error.FishyError('Kubernetes API error: %s' % what, 500)


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
            raise error.FishyError(str(exc), 500) from exc
    return wrapper
