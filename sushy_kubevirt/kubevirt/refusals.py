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

"""Errors raised by the pure KubeVirt model functions.

Every error carries a message meant for the Redfish client. The drivers
map them to sushy-tools errors; the suggested HTTP status is noted on each
class (``status``).
"""


class ModelError(ValueError):
    """Base class: bad input or a request the VM cannot satisfy.

    ``message_id`` names the DMTF Base registry message the drivers
    answer with; ``message_args`` (after the text) are its arguments.
    """

    status = 400
    message_id = 'GeneralError'

    def __init__(self, message, *message_args):
        super().__init__(message)
        self.message_args = message_args


class UnknownResetType(ModelError):
    """ResetType is missing or not a DMTF ResetType value (400).

    Arguments: the value, the parameter, the action.
    """

    message_id = 'ActionParameterValueNotInList'


class MissingResetType(UnknownResetType):
    """The Reset action has no ResetType (400).

    Arguments: the action, the parameter.
    """

    message_id = 'ActionParameterMissing'


class NotSupported(ModelError):
    """A valid DMTF ResetType KubeVirt cannot perform (e.g. Nmi).

    Redfish answers an action parameter value the service does not support
    with 400 and the Base message ``ActionParameterNotSupported``; 501 would
    claim the whole action is unimplemented, which is false for Reset.
    Arguments: the parameter, the action.
    """

    message_id = 'ActionParameterNotSupported'


class TransitionInProgress(ModelError):
    """The request conflicts with a power transition in progress.

    Suggested answer: 409 Conflict, or - to let sushy retry the POST by
    itself (its connector retries 5xx answers whose message contains
    ``SYS518``, as sushy-tools' Nova driver does) - 503 with that marker.
    The request is safe to repeat once the transition ends. Arguments:
    the parameter, its value.
    """

    status = 409
    message_id = 'ActionParameterValueConflict'


class UnsupportedTarget(ModelError):
    """BootSourceOverrideTarget this model cannot set (400).

    Arguments: the value, the property.
    """

    message_id = 'PropertyValueNotInList'


class NoSuchDevice(ModelError):
    """The VM has no device of the requested boot target kind (400)."""

    message_id = 'PropertyValueNotInList'

    def __init__(self, target):
        super().__init__(
            'The virtual machine has no device for boot target %s' % target,
            target, 'Boot/BootSourceOverrideTarget')
        self.target = target


class UnknownBootMode(ModelError):
    """BootSourceOverrideMode other than UEFI or Legacy (400)."""

    message_id = 'PropertyValueNotInList'


class SecureBootRequiresUefi(ModelError):
    """Secure boot was requested while the boot mode is Legacy (400)."""

    message_id = 'PropertyValueConflict'


class UnknownAttribute(ModelError):
    """A BIOS attribute name this system does not have (400)."""

    message_id = 'PropertyUnknown'


class InvalidAttributeValue(ModelError):
    """A BIOS attribute value outside its allowed values (400)."""

    message_id = 'PropertyValueNotInList'


class InvalidQuantity(ModelError):
    """A Kubernetes resource quantity that does not parse."""
