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

"""The DMTF ResourceEvent registry messages our events carry.

Texts and severities of ResourceEvent 1.4.2 (DSP8011), for the
MessageIds the EventService sends; sushy ships no ResourceEvent registry.
"""

PREFIX = 'ResourceEvent'
REGISTRY = PREFIX + '.1.4.2'

#: MessageId -> (MessageSeverity, message template with %1..).
MESSAGES = {
    'ResourceCreated': ('OK', 'The resource was created successfully.'),
    'ResourceRemoved': ('OK', 'The resource was removed successfully.'),
    'ResourceChanged': ('OK', 'One or more resource properties have '
                        'changed.'),
    'ResourcePoweredOn': ('OK', "The resource '%1' has powered on."),
    'ResourcePoweringOn': ('OK', "The resource '%1' is powering on."),
    'ResourcePoweredOff': ('OK', "The resource '%1' has powered off."),
    'ResourcePoweringOff': ('OK', "The resource '%1' is powering off."),
    'ResourcePaused': ('OK', "The resource '%1' was paused."),
    'ResourceErrorsDetected': ('Warning', "The resource property %1 has "
                               "detected errors of type '%2'."),
    'ResourceErrorsCorrected': ('OK', "The resource property %1 has "
                                "corrected errors of type '%2'."),
}


def record(message_id, args, origin, event_id, timestamp):
    """One ``Events[]`` member of a Redfish ``Event`` payload."""
    severity, template = MESSAGES[message_id]
    args = [str(arg) for arg in args]
    text = template
    for index in range(len(args), 0, -1):
        text = text.replace('%%%d' % index, args[index - 1])
    return {
        'EventId': event_id,
        'EventTimestamp': timestamp,
        'MessageId': '%s.%s' % (REGISTRY, message_id),
        'Message': text,
        'MessageArgs': args,
        'MessageSeverity': severity,
        'Severity': severity,
        'OriginOfCondition': {'@odata.id': origin},
    }
