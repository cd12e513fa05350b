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

"""VirtualMedia as a plugin virtual-media driver serves it.

Bodies are checked before sushy-tools' views see them (the stock views
answer 500 to a body that is not a JSON object); an action's body
becomes the parameters of the drivers' request object
(:class:`~sushy_kubevirt.drivers.context.Request`), which the driver
reads where sushy-tools' view passes it only some of them. A GET
carries the driver's ``get_device_status()``: the import's Status and
Oem. An empty slot's ``Image`` and ``ImageName`` are null (sushy-tools
renders ``""``).
"""

import json

import flask

from sushy_kubevirt.drivers import context
from sushy_kubevirt.drivers import vmedia
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt.kubevirt import tray
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody
from sushy_kubevirt.redfish import oem


def _refused(app, identity, exc):
    """Raise ``exc`` (a 400 about the body) once the System is found.

    A System outside the account's namespaces is a 404, whatever the
    body says: a 400 would tell that it exists. Looked up only for a
    bad body (a valid one costs no extra read; the driver finds the VM).
    """
    vmedia.find_vm(app.systems, identity)
    raise exc


def _parameters(action, body):
    request = context.current()
    request.action, request.parameters = action, body


def check_insert_body(app, identity, device):
    """InsertMedia of a plugin vmedia driver: its parameters checked.

    A JSON object whose parameters :func:`tray.insert_request` accepts
    (``TransferProtocolType`` agreeing with the Image URL's scheme,
    ``VerifyCertificate`` a boolean, ...), else a 400 naming the first
    problem; nothing is changed.
    """
    if base.vmedia_driver(app):
        try:
            body = base.json_body()
            try:
                tray.insert_request(body)
            except imageurl.Invalid as exc:
                raise vmedia.refused(exc) from None
        except messages.RedfishError as exc:
            _refused(app, identity, exc)
        _parameters(tray.INSERT, body)


def check_eject_body(app, identity, device):
    """EjectMedia's body, if any, is JSON (checked by the driver)."""
    if not base.vmedia_driver(app):
        return
    body = flask.request.get_json(silent=True)
    if body is None and flask.request.get_data():
        raise messages.RedfishError(
            'MalformedJSON', detail='The %s body is not JSON' % tray.EJECT)
    _parameters(tray.EJECT, body)


def check_patch(app, identity, device):
    """A VirtualMedia PATCH sets exactly the boolean VerifyCertificate.

    For a plugin vmedia driver; anything else is a 400 (a body that is
    not a JSON object too).
    """
    if not base.vmedia_driver(app):
        return
    try:
        base.one_boolean(base.json_body(), 'VerifyCertificate')
    except messages.RedfishError as exc:
        _refused(app, identity, exc)


def check_certificate_body(app, identity, device):
    """A certificate POST: ``CertificateString`` and ``CertificateType``.

    For a plugin vmedia driver: a JSON object with exactly those two
    strings, else a 400 (sushy-tools answers 500 to a body that is not an
    object); the driver then checks the PEM.
    """
    if not base.vmedia_driver(app):
        return
    try:
        _certificate(base.json_body())
    except messages.RedfishError as exc:
        _refused(app, identity, exc)


def _certificate(body):
    names = ('CertificateString', 'CertificateType')
    base.unknown(body, names)
    for name in names:
        if name not in body:
            raise messages.RedfishError('PropertyMissing', name,
                                        properties=['/' + name])
        if not isinstance(body[name], str):
            raise messages.RedfishError(
                'PropertyValueTypeError', json.dumps(body[name]), name,
                properties=['/' + name])
    base.choice('CertificateType', body['CertificateType'], ('PEM',))


def device_body(app, response):
    """The stock GET, with the driver's ``get_device_status()``."""
    if not base.vmedia_driver(app):
        return
    extra = getattr(app.vmedia, 'get_device_status', None)
    if extra is None:
        return
    args = flask.request.view_args
    properties = extra(args['identity'], args['device'])

    def edit(body):
        body.update(properties)
        for key in ('Image', 'ImageName'):
            if body.get(key) == '':
                body[key] = None
        oem.typed(body, 'VirtualMedia')
        return True
    jsonbody.rewrite(response, edit)
