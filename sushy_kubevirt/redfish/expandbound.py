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

"""An ``$expand`` of the Systems collection past its bound, refused first.

:mod:`.query` estimates an expansion from the links of the answer and of
one sample resource per URL rule; for ``GET /redfish/v1/Systems`` that
means rendering the whole collection before the first sample.
:class:`Bound` decides it before Flask, from what the estimate would
use: the Systems the account reaches, counted in the watch cache
without naming them, and the links of the System an earlier expansion of
the same mode sampled (:data:`.query.SAMPLED`) while that System's ETag
is the same (:meth:`cached_etag
<.drivers.systems.KubeVirtDriver.cached_etag>`). With ``$levels`` of 2 or
more the estimate's first two levels are ``count * (1 + links)``; past
:data:`.query.MAX_EXPANDED` the answer is the 400 the estimate would
give (the same status, Base message and headers), with no Kubernetes API
call.

Anything else goes to Flask as before: another path, method or query
parameter, one level, no sample yet or a changed one (which Flask's
estimate samples afresh), a body, an ``OData-Version`` other than 4.0,
conditional headers, an account the cluster's RBAC decides for, or one
lacking the collection's privilege. An expansion within the bound is
always Flask's: it answers exactly as before.
"""

import json
import urllib.parse

from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import query
from sushy_kubevirt.redfish import rendered
from sushy_kubevirt.redfish import responses

ENDPOINT = 'system_collection_resource'
PATH = '/redfish/v1/Systems'
_HEADERS = [('Content-Type', 'application/json'),
            ('OData-Version', responses.ODATA_VERSION),
            ('Cache-Control', 'no-cache')]


class Bound:
    """WSGI: a Systems ``$expand`` past the bound refused, else ``wrapped``.

    :param app: the Flask application (its config and systems driver).
    :param wrapped: the WSGI callable it refuses in front of.
    :param privilege: what a GET of the Systems collection needs.
    """

    def __init__(self, app, wrapped, privilege):
        self.app = app
        self.wrapped = wrapped
        self.privilege = privilege

    def __call__(self, environ, start_response):
        body = self._refusal(environ)
        if body is None:
            return self.wrapped(environ, start_response)
        data = json.dumps(body).encode()
        start_response('400 BAD REQUEST', _HEADERS + [
            ('Content-Length', str(len(data)))])
        return [data]

    def _refusal(self, environ):
        """The 400's body, or None for Flask to answer."""
        if environ.get('PATH_INFO') != PATH or \
                environ.get('REQUEST_METHOD') != 'GET':
            return None
        name, _, value = environ.get('QUERY_STRING', '').partition('=')
        if '&' in value or urllib.parse.unquote_plus(name) != '$expand':
            return None
        value = urllib.parse.unquote_plus(value)
        expansion = query.expansion(value)
        if expansion is None or expansion[1] < 2 or \
                not self._plain(environ):
            return None
        systems = base.systems_driver(self.app, 'count_systems')
        reaches = self._reaches(environ)
        sample = query.SAMPLED.get(systems, {}).get(expansion[0]) \
            if systems is not None else None
        if reaches is None or sample is None or \
                systems.cached_etag(sample[0]) != sample[1]:
            return None
        count = systems.count_systems(
            None if reaches is _everything else reaches)
        if count is None or count * (1 + sample[2]) <= query.MAX_EXPANDED:
            return None
        return messages.body(query.refusal(value), 400, PATH)

    def _plain(self, environ):
        settings = self.app.config
        return environ.get('CONTENT_LENGTH') in (None, '', '0') and \
            environ.get('HTTP_ODATA_VERSION', responses.ODATA_VERSION) == \
            responses.ODATA_VERSION and not any(
                name in environ for name in rendered.NOT_PLAIN) and \
            not any(settings.get(name) is not None
                    for name in rendered.ROUTING)

    def _reaches(self, environ):
        """``reaches(namespace, labels)`` of the account, else None."""
        try:
            account = access.request_account(self.app, environ)
        except messages.RedfishError:
            return None   # Flask answers it
        if account is None:
            return _everything
        if isinstance(account, kubeaccounts.KubeAccount) or \
                not account.allows(self.privilege):
            return None
        return account.reaches


def _everything(namespace, labels):
    return True
