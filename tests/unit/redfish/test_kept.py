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

"""Which requests ``rendered.Kept`` answers before Flask, and which not."""

import logging
import types

import pytest

from sushy_kubevirt.accounts import accountsfile
from sushy_kubevirt.accounts import kubeaccounts
from sushy_kubevirt.accounts import privileges
from sushy_kubevirt import config
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import rendered

UUID = '4f1d3c2a-0000-4000-8000-000000000001'
ANSWER = ('"etag-1"', b'{"Id": "x"}', [('Content-Type', 'application/json'),
                                       ('ETag', '"etag-1"')])


class Systems:
    """The VM of UUID is in ns-a."""

    def __init__(self):
        self.etag = '"etag-1"'
        self.file = None

    def kept_etag(self, ident, reaches):
        return self.etag if ident == UUID and reaches('ns-a', {}) else None

    def accounts(self):
        return self.file


class File:
    def __init__(self, **accounts):
        self.accounts = accounts

    def account(self, user):
        if self.accounts is None:
            raise accountsfile.AccountsError('unreadable')
        return self.accounts.get(user)


@pytest.fixture
def kept():
    systems = Systems()
    app = types.SimpleNamespace(
        config={config.SYSTEMS_DRIVER_KEY: 'kubevirt'}, systems=systems,
        logger=logging.getLogger(__name__))
    rendered._KEPT[systems] = {UUID: ANSWER}
    calls = []

    def flask_app(environ, start_response):
        calls.append(environ)
        start_response('404 NOT FOUND', [])
        return [b'from Flask']
    yield rendered.Kept(app, flask_app, privileges.LOGIN), app, systems, \
        calls
    rendered._KEPT.pop(systems, None)


def _get(wsgi, path=rendered.PREFIX + UUID, **environ):
    started = []
    environ = dict({'REQUEST_METHOD': 'GET', 'PATH_INFO': path}, **environ)
    body = b''.join(wsgi(environ, lambda s, h: started.append((s, h))))
    return started[0][0], started[0][1], body


def test_a_plain_get_is_answered_its_kept_bytes(kept):
    wsgi, _, _, calls = kept
    assert _get(wsgi) == ('200 OK', ANSWER[2], ANSWER[1])
    assert _get(wsgi, HTTP_ODATA_VERSION='4.0')[2] == ANSWER[1]
    assert not calls


@pytest.mark.parametrize('environ', [
    {'REQUEST_METHOD': 'HEAD'},
    {'REQUEST_METHOD': 'PATCH'},
    {'QUERY_STRING': '$select=Id'},
    {'HTTP_IF_NONE_MATCH': '"etag-1"'},
    {'HTTP_ODATA_VERSION': '4.1'},
    {'CONTENT_LENGTH': '2'},
    {'HTTP_TRANSFER_ENCODING': 'chunked'},
    {auth.USER_KEY: 'admin', auth.ACCOUNT_KEY: kubeaccounts.KubeAccount(
        None, None)},
    {'PATH_INFO': rendered.PREFIX + UUID + '/'},
    {'PATH_INFO': rendered.PREFIX + UUID.upper()},
    {'PATH_INFO': '/redfish/v1/Chassis/' + UUID},
], ids=repr)
def test_anything_else_goes_to_flask(kept, environ):
    wsgi, _, _, calls = kept
    assert _get(wsgi, **environ)[2] == b'from Flask'
    assert len(calls) == 1


@pytest.mark.parametrize('setting', [
    'SERVER_NAME', 'TRUSTED_HOSTS', 'SUSHY_EMULATOR_ALLOWED_INSTANCES'])
def test_settings_that_route_otherwise_go_to_flask(kept, setting):
    wsgi, app, _, calls = kept
    app.config[setting] = []
    assert _get(wsgi)[2] == b'from Flask'


def test_a_changed_or_another_driver_goes_to_flask(kept):
    wsgi, app, systems, calls = kept
    systems.etag = '"etag-2"'
    assert _get(wsgi)[2] == b'from Flask'
    systems.etag = None   # the watch cache cannot say
    assert _get(wsgi)[2] == b'from Flask'
    app.config.pop(config.SYSTEMS_DRIVER_KEY)
    systems.etag = '"etag-1"'
    assert _get(wsgi)[2] == b'from Flask'
    assert len(calls) == 3


def test_an_authenticated_account_is_asked_what_flask_asks(kept):
    wsgi, _, systems, calls = kept
    # Without an accounts file every user is an Administrator.
    assert _get(wsgi, **{auth.USER_KEY: 'admin'})[2] == ANSWER[1]
    systems.file = File(
        op=accountsfile.Account('op', 'Operator', frozenset({'ns-a'})),
        other=accountsfile.Account('other', 'Operator',
                                   frozenset({'ns-b'})))
    assert _get(wsgi, **{auth.USER_KEY: 'op'})[2] == ANSWER[1]
    assert not calls
    for user in ('other', 'removed'):
        assert _get(wsgi, **{auth.USER_KEY: user})[2] == b'from Flask'
    # A role without the privilege the route needs.
    needs_more = rendered.Kept(wsgi.app, wsgi.wrapped,
                               privileges.CONFIGURE_MANAGER)
    assert _get(needs_more, **{auth.USER_KEY: 'op'})[2] == b'from Flask'
    systems.file.accounts = None   # the file cannot be read
    assert _get(wsgi, **{auth.USER_KEY: 'op'})[2] == b'from Flask'
    assert len(calls) == 4
