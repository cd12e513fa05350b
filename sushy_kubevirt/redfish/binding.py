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

"""Each Flask request's driver request object.

The drivers import no Flask: :func:`begin` (the first thing of the
``before_request`` hook, :mod:`sushy_kubevirt.hooks`) builds the
:class:`~sushy_kubevirt.drivers.context.Request` from the Flask request
and binds it for sushy-tools' unmodified views, whose calls of the
drivers have fixed signatures; :func:`end` (a ``teardown_request``
hook) unbinds it. The rest of the Redfish layer fills it in (the
account, :mod:`.access`; an action's parameters) and passes it to the
driver methods it calls itself (:func:`.context.current`).
"""

import flask

from sushy_kubevirt.drivers import context

#: sushy-tools' endpoint of a System resource.
SYSTEM_ENDPOINT = 'system_resource'
#: ``flask.g`` key of the token that unbinds the request object.
_TOKEN = 'sushy_kubevirt_request'


def begin():
    """Bind a new request object for this Flask request."""
    request = flask.request
    system = (request.view_args or {}).get('identity') \
        if request.endpoint == SYSTEM_ENDPOINT else None
    setattr(flask.g, _TOKEN, context.bind(
        context.Request(method=request.method, system=system)))


def end(exc=None):
    """Unbind this Flask request's request object."""
    token = flask.g.pop(_TOKEN, None)
    if token is not None:
        context.unbind(token)
