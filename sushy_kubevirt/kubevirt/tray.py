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

"""The virtual-media policy: action parameters, tray reuse, Status.

Pure functions of request bodies, VMs and DataVolumes (see
:mod:`sushy_kubevirt.kubevirt.media` for the objects); no I/O. Bad input
raises :class:`~sushy_kubevirt.kubevirt.imageurl.Invalid` naming a DMTF
Base registry message.
"""

import collections

from sushy_kubevirt.kubevirt import boot
from sushy_kubevirt.kubevirt import fields
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import imports
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import media
from sushy_kubevirt.kubevirt import refusals

CD = 'Cd'
#: The devices offered, with their Redfish Name and MediaTypes.
DEVICES = {CD: {'Name': 'Virtual CD', 'MediaTypes': ['CD', 'DVD']}}
INSERT = 'VirtualMedia.InsertMedia'
EJECT = 'VirtualMedia.EjectMedia'
#: InsertMedia parameters understood (DMTF VirtualMedia.InsertMedia).
PARAMETERS = ('Image', 'Inserted', 'WriteProtected', 'UserName',
              'Password', 'TransferProtocolType', 'TransferMethod',
              'VerifyCertificate')
PROTOCOLS = ('HTTP', 'HTTPS')
METHODS = ('Stream',)
MASKED = '******'

#: A checked insert; ``name``/``action``: where the URL came from;
#: ``verify``: the VerifyCertificate sent with it (None: not sent).
Insert = collections.namedtuple(
    'Insert', ['url', 'inserted', 'username', 'password', 'name',
               'action', 'verify'], defaults=(None,))


def _not_object(action):
    return imageurl.Invalid('MalformedJSON', (),
                            'The %s body must be a JSON object' % action)


def _unknown(body, allowed, action):
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise imageurl.Invalid(
            'ActionParameterUnknown', (action, unknown[0]),
            '%s parameter %s is not supported; supported: %s'
            % (action, ', '.join(unknown), ', '.join(allowed) or 'none'))


def _typed(body, name, kind, default):
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise imageurl.invalid(
            'type', value, name, INSERT, '%s must be %s' % (
                name, 'true or false' if kind is bool else 'a string'))
    return value


def _choice(body, name, allowed):
    value = _typed(body, name, str, None)
    if value is not None and value not in allowed:
        raise imageurl.Invalid(
            'ActionParameterValueNotInList',
            (imageurl.shown(value), name, INSERT),
            '%s %r is not supported; supported: %s'
            % (name, imageurl.shown(value), ', '.join(allowed)))
    return value


def _conflict(name, value, detail):
    return imageurl.invalid('denied', value, name, INSERT, detail)


def insert_request(body):
    """The InsertMedia ``body`` checked: an :class:`Insert`.

    Credentials come from ``UserName``/``Password`` or from the Image
    URL's userinfo (never both); the URL kept has no userinfo.

    :raises imageurl.Invalid: the first problem found.
    """
    if not isinstance(body, dict):
        raise _not_object(INSERT)
    _unknown(body, PARAMETERS, INSERT)
    if body.get('Image') in (None, ''):
        raise imageurl.Invalid(
            'ActionParameterMissing', (INSERT, 'Image'),
            'InsertMedia requires Image: the http or https URL of the '
            'image')
    url = imageurl.parse(body['Image'], 'Image', INSERT)
    inserted = _typed(body, 'Inserted', bool, True)
    if not _typed(body, 'WriteProtected', bool, True):
        raise _conflict('WriteProtected', False,
                        'WriteProtected false is not possible: a virtual '
                        'CD is read-only')
    username = _typed(body, 'UserName', str, '') or None
    password = _typed(body, 'Password', str, '') or None
    if (username is None) != (password is None):
        raise imageurl.Invalid(
            'ActionParameterMissing',
            (INSERT, 'Password' if username else 'UserName'),
            'UserName and Password must be passed together')
    if username and url.username:
        raise _conflict('UserName', username,
                        'Give the credentials either in the Image URL or '
                        'as UserName and Password, not both')
    protocol = _choice(body, 'TransferProtocolType', PROTOCOLS)
    if protocol is not None and protocol != url.scheme.upper():
        raise _conflict('TransferProtocolType', protocol,
                        'TransferProtocolType %s does not match the Image '
                        'URL scheme (%s)' % (protocol, url.scheme.upper()))
    _choice(body, 'TransferMethod', METHODS)
    verify = _typed(body, 'VerifyCertificate', bool, None)
    return Insert(url, inserted, username or url.username,
                  password or url.password, 'Image', INSERT, verify)


def uri_request(uri, name):
    """An :class:`Insert` of resource property ``name`` (HttpBootUri)."""
    url = imageurl.parse(uri, name)
    return Insert(url, True, url.username, url.password, name, None)


def eject_request(body):
    """Check an EjectMedia body (absent or ``{}``: it has no parameter)."""
    if body is None:
        return
    if not isinstance(body, dict):
        raise _not_object(EJECT)
    _unknown(body, (), EJECT)


def reusable(dv, url, inserted, credentials, tls=(None, False)):
    """True when ``dv`` already is (or is becoming) the wanted media.

    Media with credentials is always imported again: whether the
    password changed cannot be told without reading the Secret. So is
    media verified otherwise than ``tls`` (:func:`media.tls_source`).
    """
    if dv is None or credentials or \
            fields.get(dv, 'metadata', 'deletionTimestamp'):
        return False
    return (media.source_url(dv) == url
            and media.tls_source(dv) == tuple(tls)
            and not imports.failed(dv)
            and fields.annotation(dv, media.ANNOTATION_USERNAME) is None
            and (fields.annotation(dv, media.ANNOTATION_INSERTED)
                 != 'false') == inserted)


def attach_ops(vm, device, dv_name):
    """:func:`media.attach_ops`; a CD-ROM added for a kept Cd boots first.

    (:func:`boot.cd_attached_ops`: Cd was set while the tray was empty.)
    """
    ops = media.attach_ops(vm, device, dv_name)
    if not ops:
        return ops
    return ops + boot.cd_attached_ops(vm, jsonpatch.apply(vm, ops))


def eject_ops(vm, device):
    """Detach ops; a boot device of Cd becomes Hdd, a pending Once stays.

    (:func:`boot.cd_detached_ops`: a one-time Cd boot then falls through,
    as one set on an empty tray.)
    """
    detach = media.detach_ops(vm, device)
    if not detach or boot.boot_device(vm) != boot.CD:
        return detach
    try:
        reset = boot.cd_detached_ops(vm, media.disk_name(device))
    except refusals.ModelError:
        reset = []
    return reset + detach


def credentials_shown(dv, state):
    """``(UserName, Password)`` as VirtualMedia shows them.

    The UserName given as a parameter is shown; the password is masked;
    credentials from a URL's userinfo show as an empty UserName.
    """
    username = fields.annotation(dv, media.ANNOTATION_USERNAME) \
        if state.image else None
    if username is None:
        return '', ''
    return username, MASKED


def device_status(dv, state):
    """Properties added to the VirtualMedia resource.

    ``Status`` (VirtualMedia v1.4, Resource State and Health):

    * no image, or imported: State Enabled, Health OK;
    * importing: State Starting, Health OK, or Warning when the importer's
      first attempt failed (the error as a Condition);
    * import failed (:func:`imports.failed`: phase Failed, or the importer
      restarted and failed again): State UnavailableOffline ("present but
      cannot be used": the image is shown but never boots; an eject or a
      new insert clears it), Health Critical, the error as a Condition.

    ``Oem.SushyKubevirt``: the DataVolume's name, phase, progress, error.
    """
    phase = fields.get(dv, 'status', 'phase') if state.image else None
    status = {'State': 'Enabled', 'Health': 'OK'}
    if state.image and imports.failed(dv):
        status.update(State='UnavailableOffline', Health='Critical')
    elif state.image and phase != media.SUCCEEDED:
        status['State'] = 'Starting'
        if state.error:
            status['Health'] = 'Warning'
    if state.error:
        status['Conditions'] = [{
            'MessageId': 'Base.1.0.GeneralError',
            'Message': 'Image import: %s' % state.error,
            'Severity': status['Health']}]
    return {'Status': status,
            'Oem': {'SushyKubevirt': {
                'DataVolume': fields.get(dv, 'metadata', 'name')
                if state.image else None,
                'ImportPhase': phase,
                'ImportProgress': state.progress if state.image else None,
                'ImportError': state.error}}}


def power_on_blocker(vm, dv, device):
    """Why ``vm`` must not start now because of its tray, or None.

    Returns ``(retryable, message)``: retryable while the attached image is
    still importing (or its DataVolume is being replaced), not retryable
    when the import failed (:func:`imports.failed`) - a failed import never
    starts the VM.
    """
    wanted = media.attached_datavolume(vm, device)
    if wanted is None:
        return None
    if not dv or fields.get(dv, 'metadata', 'name') != wanted:
        return (True, 'the virtual media DataVolume %s is being replaced'
                % wanted)
    phase = fields.get(dv, 'status', 'phase')
    if phase == media.SUCCEEDED:
        return None
    if imports.failed(dv):
        count = imports.restarts(dv)
        return (False, 'the virtual media import of %s failed%s: %s; eject '
                'it or insert the media again' % (
                    media.source_url(dv),
                    ' (CDI restarted the importer %d time%s)'
                    % (count, '' if count == 1 else 's') if count else '',
                    media.import_error(dv)))
    progress = fields.get(dv, 'status', 'progress') or 'N/A'
    failing = media.import_error(dv)
    return (True, 'the virtual media import of %s is in progress '
            '(phase %s, %s%s)' % (media.source_url(dv), phase or 'Pending',
                                  progress,
                                  '; last error: %s' % failing
                                  if failing else ''))
