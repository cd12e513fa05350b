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

"""Systems: the collection, a System, its Reset and its SecureBoot.

sushy-tools serves these; for a plugin systems driver the handlers here
check every body before anything changes, pass the PATCH's
``BootSourceOverrideEnabled`` (which the stock route ignores) to the
driver, and edit the stock GET: the driver's override state, the
AllowableValues it honours, ``BootProgress``
(:mod:`sushy_kubevirt.kubevirt.bootprogress`), ``HealthRollup``, the
schema's BIOS URI and a null ``UUID`` for a VM whose firmware UUID holds
none.
"""

import json

import flask
from sushy_tools.emulator import api_utils
from sushy_tools import error

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import lookup
from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import indicator
from sushy_kubevirt.kubevirt import power
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody

OVERRIDE_ENABLED = ('Once', 'Continuous', 'Disabled')
BOOT_MODES = ('UEFI', 'Legacy')
# DMTF ComputerSystem.BootSource; the driver decides which it can honour.
BOOT_TARGETS = (
    'None', 'Pxe', 'Floppy', 'Cd', 'Usb', 'Hdd', 'BiosSetup', 'Utilities',
    'Diags', 'UefiShell', 'UefiTarget', 'SDCard', 'UefiHttp', 'RemoteDrive',
    'UefiBootNext', 'Recovery')
_BOOT_KEYS = ('BootSourceOverrideEnabled', 'BootSourceOverrideTarget',
              'BootSourceOverrideMode', 'HttpBootUri')
_SYSTEM_KEYS = ('Boot', 'IndicatorLED')
_URI = 'Boot/HttpBootUri'
_RESET = 'ComputerSystem.Reset'
#: The systems driver method that marks a driver of ours.
_METHOD = 'get_boot_source_override_enabled'


def _check_patch(body):
    base.unknown(body, _SYSTEM_KEYS)
    base.choice('IndicatorLED', body.get('IndicatorLED'), indicator.STATES)
    override = body.get('Boot')
    if override is None:
        return {}
    if not isinstance(override, dict):
        raise messages.RedfishError(
            'PropertyValueTypeError', override, 'Boot', properties=['/Boot'],
            detail='Boot must be a JSON object')
    base.unknown(override, _BOOT_KEYS, 'Boot/')
    for prop, allowed in (('BootSourceOverrideEnabled', OVERRIDE_ENABLED),
                          ('BootSourceOverrideTarget', BOOT_TARGETS),
                          ('BootSourceOverrideMode', BOOT_MODES)):
        base.choice('Boot/' + prop, override.get(prop), allowed)
    _check_uri(override)
    return override


def _check_uri(override):
    """An HttpBootUri is a URL and goes with the target UefiHttp.

    It is applied only so (its image is inserted as a CD and booted):
    with no target or another one it would change nothing, so it is
    refused. ``null`` clears the recorded one, with any target.
    """
    uri = override.get('HttpBootUri')
    if uri is None:
        return
    if not isinstance(uri, str):
        raise messages.RedfishError(
            'PropertyValueTypeError', uri, 'Boot/HttpBootUri',
            properties=['/Boot/HttpBootUri'])
    try:
        imageurl.parse(uri, _URI)
    except imageurl.Invalid as exc:
        raise messages.RedfishError(
            'PropertyValueFormatError', imageurl.shown(uri), _URI,
            properties=['/' + _URI], detail=str(exc)) from None
    if override.get('BootSourceOverrideTarget') != boot.UEFI_HTTP:
        raise messages.RedfishError(
            'PropertyValueConflict', _URI, 'Boot/BootSourceOverrideTarget',
            properties=['/' + _URI], detail='HttpBootUri is applied with '
            'BootSourceOverrideTarget UefiHttp in the same PATCH (its image '
            'is booted as a CD); null clears it')


def boot_targets(mode):
    """The BootSourceOverrideTarget values accepted in boot ``mode``."""
    return boot.TARGETS if mode == 'UEFI' else tuple(
        t for t in boot.TARGETS if t != boot.UEFI_HTTP)


def _set_target(app, systems, identity, override, target, enabled):
    """Apply BootSourceOverrideTarget (with HttpBootUri) and Enabled."""
    uri = override.get('HttpBootUri')
    if target is not None and not (target == 'UefiHttp' and uri):
        # UefiHttp with an HttpBootUri boots the image as a CD in either
        # mode (as in sushy-tools); without one it is a UEFI network boot.
        mode = override.get('BootSourceOverrideMode') or \
            systems.get_boot_mode(identity)
        base.choice('Boot/BootSourceOverrideTarget', target,
                    boot_targets(mode))
    if uri and target == 'UefiHttp':
        # As the stock route: the URI is inserted as the CD and booted.
        image = app.vmedia.insert_image(identity, 'Cd', uri)
        systems.set_boot_image(systems.uuid(identity), 'Cd',
                               boot_image=image, write_protected=True)
        systems.set_http_boot_uri(identity, uri)
        target = 'Cd'
    elif target == 'UefiHttp':
        target = 'Pxe'
    if enabled and not target:
        target = systems.get_boot_device(identity)
    if target:
        systems.set_boot_device(identity, target, enabled)


def patch_system(app, identity):
    """PATCH a System of a plugin driver: validate, then apply.

    The stock route ignores ``BootSourceOverrideEnabled``; here it reaches
    ``set_boot_device(identity, target, enabled)``. A PATCH of only
    ``BootSourceOverrideEnabled`` re-applies the current target;
    ``Disabled`` (or the target ``None``) ends the override, the target
    staying the current one. An ``HttpBootUri`` goes with the target
    ``UefiHttp``; ``null`` clears the recorded one. Nothing changes unless
    the whole body is valid.
    """
    if flask.request.method != 'PATCH':
        return None
    systems = base.systems_driver(app, _METHOD)
    if systems is None:
        return None
    if api_utils.instance_denied(identity=identity):
        raise error.NotFound()
    uuid = systems.uuid(identity)
    body = base.json_body()
    override = _check_patch(body)
    led = body.get('IndicatorLED')
    if not override and not led:
        raise messages.RedfishError(
            'PropertyMissing', 'Boot', detail='PATCH needs Boot or '
            'IndicatorLED')
    if led and app.feature_set != 'full':
        raise messages.RedfishError(
            'PropertyUnknown', 'IndicatorLED', properties=['/IndicatorLED'],
            detail='IndicatorLED needs the "full" feature set')
    target = override.get('BootSourceOverrideTarget')
    enabled = override.get('BootSourceOverrideEnabled')
    if target == 'None':
        # The normal boot device: no override (as sushy-tools has it).
        if enabled not in (None, boot.DISABLED):
            raise messages.RedfishError(
                'PropertyValueConflict', 'Boot/BootSourceOverrideTarget',
                'Boot/BootSourceOverrideEnabled', properties=[
                    '/Boot/BootSourceOverrideTarget'],
                detail='BootSourceOverrideTarget None goes with '
                'BootSourceOverrideEnabled Disabled')
        target, enabled = None, boot.DISABLED
    if enabled == boot.DISABLED:
        systems.set_boot_device(identity, target, enabled)
    else:
        _set_target(app, systems, identity, override, target, enabled)
    if 'HttpBootUri' in override and override['HttpBootUri'] is None:
        systems.set_http_boot_uri(identity, None)
    if override.get('BootSourceOverrideMode'):
        systems.set_boot_mode(identity, override['BootSourceOverrideMode'])
    if led:
        app.indicators.set_indicator_state(uuid, led)
    return flask.Response(status=204)


def system_body(app, response):
    """The stock GET of a System, with the driver's boot facts."""
    systems = base.systems_driver(app, _METHOD)
    if systems is None:
        return
    ident = flask.request.view_args['identity']
    enabled = systems.get_boot_source_override_enabled(ident)
    targets = systems.get_boot_targets(ident)
    progress = systems.get_boot_progress(ident)

    def edit(body):
        if lookup.canonical_uuid(body.get('UUID')) is None:
            body['UUID'] = None   # the firmware UUID holds no UUID
        override = body.setdefault('Boot', {})
        if override.get('HttpBootUri') == 'None':
            # The template renders an unset URI with ``|string``.
            override['HttpBootUri'] = None
        override['BootSourceOverrideEnabled'] = enabled
        override['BootSourceOverrideEnabled@Redfish.AllowableValues'] = list(
            OVERRIDE_ENABLED)
        if 'BootSourceOverrideTarget@Redfish.AllowableValues' in override:
            override['BootSourceOverrideTarget@Redfish.AllowableValues'] = \
                list(targets)
        body['BootProgress'] = progress
        reset = body.get('Actions', {}).get('#ComputerSystem.Reset')
        if reset:
            reset['ResetType@Redfish.AllowableValues'] = list(
                power.SUPPORTED_RESET_TYPES)
        link = body.get('Bios', {}).get('@odata.id', '')
        if link.endswith('/BIOS') and hasattr(systems, 'get_bios_settings'):
            # The URI the schema allows (sushy_kubevirt.redfish.bios).
            body['Bios']['@odata.id'] = link[:-len('BIOS')] + 'Bios'
        for status in (body.get('Status'),
                       body.get('ProcessorSummary', {}).get('Status'),
                       body.get('MemorySummary', {}).get('Status')):
            if status and 'HealthRollUp' in status:
                status['HealthRollup'] = status.pop('HealthRollUp')
        return True

    jsonbody.rewrite(response, edit)


def collection_body(app, response):
    """Name the namespaces a partial Systems collection leaves out."""
    systems = base.systems_driver(app, 'collection_messages')
    extended = systems.collection_messages(context.current()) \
        if systems is not None else []
    if extended:
        jsonbody.rewrite(response, lambda body: body.update({
            '@Message.ExtendedInfo': extended}) or True)


def check_reset_body(app, identity):
    """``ComputerSystem.Reset`` takes exactly one string ``ResetType``."""
    if base.systems_driver(app, _METHOD) is None:
        return
    body = base.json_body()
    extra = sorted(set(body) - {'ResetType'})
    if extra:
        raise messages.RedfishError(
            'ActionParameterUnknown', _RESET, extra[0],
            properties=['/' + extra[0]])
    if 'ResetType' not in body:
        raise messages.RedfishError(
            'ActionParameterMissing', _RESET, 'ResetType',
            properties=['/ResetType'])
    if not isinstance(body['ResetType'], str):
        raise messages.RedfishError(
            'ActionParameterValueTypeError', json.dumps(body['ResetType']),
            'ResetType', _RESET, properties=['/ResetType'])


def check_secure_boot_patch(app, identity):
    """A SecureBoot PATCH sets exactly the boolean ``SecureBootEnable``."""
    if flask.request.method != 'PATCH' or \
            base.systems_driver(app, _METHOD) is None:
        return
    base.one_boolean(base.json_body(), 'SecureBootEnable')
