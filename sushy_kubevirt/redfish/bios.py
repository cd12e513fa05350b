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

"""The Bios resource, its Settings object and its AttributeRegistry.

Served at the URIs the schema allows, ``/redfish/v1/Systems/{id}/Bios``
(ComputerSystem's ``Bios`` navigation; sushy-tools' ``/BIOS`` ones answer
a 308 redirect here), for a systems driver with ``get_bios_settings``.
``@Redfish.Settings`` names the Settings object: a PATCH there is checked
against :data:`sushy_kubevirt.kubevirt.bios.REGISTRY` (any fault is a 400
with its Base registry MessageId and nothing changes) and applies at the
next boot. The registry is published through sushy-tools' own
``/redfish/v1/Registries`` entry, whose content is replaced.
"""

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.kubevirt import bios
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base

_METHOD = 'get_bios_settings'
APPLY_TIMES = ('OnReset',)
REGISTRY_FILE = '/redfish/v1/Registries/BiosAttributeRegistry.v1_0_0'
REGISTRY_FILE_ID = 'BiosAttributeRegistry.v1_0_0'
#: sushy-tools' URI of the registry resource (the file's Location).
REGISTRY_URI = '/redfish/v1/Systems/Bios/BiosRegistry'
_PATCH_KEYS = ('Attributes', '@Redfish.SettingsApplyTime')


def _path(identity, sub=''):
    return '/redfish/v1/Systems/%s/Bios%s' % (identity, sub)


def resource(identity, attributes):
    return {
        '@odata.type': '#Bios.v1_1_0.Bios',
        '@odata.id': _path(identity),
        'Id': 'Bios',
        'Name': 'BIOS Configuration Current Settings',
        'AttributeRegistry': bios.REGISTRY_ID,
        'Attributes': attributes,
        '@Redfish.Settings': {
            '@odata.type': '#Settings.v1_3_5.Settings',
            'SettingsObject': {'@odata.id': _path(identity, '/Settings')},
            'SupportedApplyTimes': list(APPLY_TIMES),
        },
        'Actions': {'#Bios.ResetBios': {
            'target': _path(identity, '/Actions/Bios.ResetBios')}},
    }


def settings(identity, attributes):
    return {
        '@odata.type': '#Bios.v1_1_0.Bios',
        '@odata.id': _path(identity, '/Settings'),
        'Id': 'Settings',
        'Name': 'BIOS Configuration Pending Settings',
        'AttributeRegistry': bios.REGISTRY_ID,
        'Attributes': attributes,
    }


def registry_file():
    return {
        '@odata.type': '#MessageRegistryFile.v1_1_0.MessageRegistryFile',
        '@odata.id': REGISTRY_FILE,
        'Id': REGISTRY_FILE_ID,
        'Name': 'BIOS Attribute Registry File',
        'Description': 'The BIOS attributes of the KubeVirt systems',
        'Languages': ['en'],
        'Registry': 'KubeVirtBiosAttributeRegistry.1.0',
        'Location': [{'Language': 'en', 'Uri': REGISTRY_URI}],
    }


_DERIVED_HELP = {
    'BootMode': 'Mirrors Boot/BootSourceOverrideMode (the VM firmware); '
                'not changed by ResetBios.',
    'SecureBootStatus': 'Mirrors SecureBoot/SecureBootEnable (the VM '
                        'firmware); not changed by ResetBios.',
    'NumCores': 'Mirrors the VM\'s vCPUs (sockets x cores x threads, '
                'ProcessorSummary/Count); read-only.',
}


def _entry(attr):
    entry = {
        'AttributeName': attr.name,
        'DisplayName': attr.display,
        'HelpText': _DERIVED_HELP.get(
            attr.name, 'Applies at the next boot of the system.'),
        'Type': attr.type,
        'ReadOnly': attr.read_only,
        'Immutable': attr.read_only,
        'Hidden': False,
        'ResetRequired': attr.name not in _DERIVED_HELP,
    }
    if attr.name not in _DERIVED_HELP:
        entry['DefaultValue'] = attr.default
    if attr.values:
        entry['Value'] = [{'ValueName': v, 'ValueDisplayName': v}
                          for v in attr.values]
    if attr.type == 'Integer':
        entry.update(LowerBound=attr.lower, UpperBound=attr.upper,
                     ScalarIncrement=1)
    if attr.type in ('String', 'Password'):
        entry.update(MinLength=0,
                     MaxLength=attr.max_length or bios.MAX_LENGTH)
    return entry


def registry():
    return {
        '@odata.type': '#AttributeRegistry.v1_3_0.AttributeRegistry',
        '@odata.id': REGISTRY_URI,
        'Id': bios.REGISTRY_ID,
        'Name': 'KubeVirt BIOS Attribute Registry',
        'Description': 'The BIOS attributes of the KubeVirt systems',
        'Language': 'en',
        'OwningEntity': 'sushy-kubevirt',
        'RegistryVersion': bios.REGISTRY_VERSION,
        'RegistryEntries': {'Attributes': [
            _entry(attr) for attr in bios.REGISTRY]},
    }


def _refusal(exc):
    """A model refusal as a RedfishError naming the property."""
    prop = 'Attributes' if exc.name == 'Attributes' else (
        'Attributes/' + exc.name)
    if isinstance(exc, bios.Unknown):
        args = (prop,)
    elif exc.message_id == 'PropertyNotWritable':
        args = (prop,)
    elif exc.message_id == 'StringValueTooLong':
        args = exc.message_args
    else:
        args = exc.message_args + (prop,)
    return messages.RedfishError(exc.message_id, *args, detail=str(exc),
                                 properties=['/' + prop])


def check_patch(body):
    """The Attributes of a Settings PATCH body, or a RedfishError."""
    unknown = sorted(set(body) - set(_PATCH_KEYS))
    if unknown:
        raise messages.RedfishError(
            'PropertyUnknown', unknown[0], properties=['/' + unknown[0]],
            detail='A BIOS Settings PATCH takes only %s'
            % ', '.join(_PATCH_KEYS))
    apply_time = body.get('@Redfish.SettingsApplyTime')
    if apply_time is not None:
        value = (apply_time.get('ApplyTime')
                 if isinstance(apply_time, dict) else apply_time)
        if value not in APPLY_TIMES:
            prop = '@Redfish.SettingsApplyTime/ApplyTime'
            raise messages.RedfishError(
                'PropertyValueNotInList', value, prop,
                properties=['/' + prop],
                detail='ApplyTime must be one of: %s'
                % ', '.join(APPLY_TIMES))
    attributes = body.get('Attributes')
    if attributes is None:
        raise messages.RedfishError(
            'PropertyMissing', 'Attributes', properties=['/Attributes'])
    try:
        bios.check(attributes)
    except (bios.Unknown, bios.Refused) as exc:
        raise _refusal(exc)
    return attributes


# request handlers

def _systems(identity):
    app = flask.current_app
    systems = base.systems_driver(app, _METHOD)
    if systems is None:
        raise error.NotFound()
    if app.feature_set != 'full':
        raise error.FeatureNotAvailable('BIOS')
    if api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    return systems


@base.route('/redfish/v1/Systems/<identity>/Bios', GET=privileges.LOGIN)
def bios_resource(identity):
    systems = _systems(identity)
    return base.json_response(resource(identity, systems.get_bios(identity)))


@base.route('/redfish/v1/Systems/<identity>/Bios/Settings',
            **privileges.COMPONENT)
def bios_settings(identity):
    systems = _systems(identity)
    if flask.request.method == 'GET':
        return base.json_response(
            settings(identity, systems.get_bios_settings(identity)))
    systems.uuid(identity)
    attributes = check_patch(base.json_body())
    systems.set_bios(identity, attributes)
    return flask.Response(status=204)


@base.route('/redfish/v1/Systems/<identity>/Bios/Actions/Bios.ResetBios',
            **privileges.COMPONENT_ACTION)
def bios_reset(identity):
    systems = _systems(identity)
    systems.uuid(identity)
    if flask.request.get_data():
        body = base.json_body()
        if body:
            name = sorted(body)[0]
            raise messages.RedfishError(
                'ActionParameterUnknown', 'Bios.ResetBios', name,
                properties=['/' + name])
    systems.reset_bios(identity)
    return flask.Response(status=204)


# extension-point handlers (sushy-tools' stock endpoints)

def redirect(app, identity):
    """A 308 from sushy-tools' ``/BIOS`` URIs to the schema's ``/Bios``."""
    if base.systems_driver(app, _METHOD) is None:
        return None
    path = flask.request.path
    marker = '/redfish/v1/Systems/%s/BIOS' % identity
    if not path.startswith(marker):
        return None
    return flask.redirect(_path(identity) + path[len(marker):], code=308,
                          Response=flask.Response)


def serve_registry_file(app):
    if base.systems_driver(app, _METHOD) is None:
        return None
    return base.json_response(registry_file())


def serve_registry(app):
    if base.systems_driver(app, _METHOD) is None:
        return None
    return base.json_response(registry())
