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

"""What a driver call knows of the Redfish request it serves.

The drivers import no Flask. The Redfish layer builds one
:class:`Request` per HTTP request (:mod:`sushy_kubevirt.redfish.binding`)
and passes it to the driver methods it calls itself (``hold_etag``,
``collection_messages``). sushy-tools' unmodified views call the other
methods with their fixed signatures (``insert_image(identity, device,
image, ...)``, ``get_power_state(identity)``), so the same object is
also bound to a :class:`contextvars.ContextVar` for the duration of the
request, and those methods read it with :func:`current`: the views keep
working unchanged, where answering each of their routes in the Redfish
layer instead would copy them. Outside a request (a driver's own
threads, plain Python, a unit test) nothing is bound and :func:`current`
is a fresh :class:`Request`: no account (everything reached), nothing
held, a new memo. A test binds its own with :func:`bound`.
"""

import contextlib
import contextvars
import dataclasses

_CURRENT = contextvars.ContextVar('sushy_kubevirt_request')


@dataclasses.dataclass
class Request:
    """One Redfish request, as the drivers see it."""

    #: The account it acts for (``accounts.accountsfile.Account`` or
    #: ``accounts.kubeaccounts.KubeAccount``); None restricts nothing.
    account: object = None
    #: Its HTTP method; a GET reads each object once (:mod:`.snapshot`).
    method: str = None
    #: The id in the URL of a System resource request (not of the
    #: resources below it): sushy-tools passes the System's UUID to some
    #: drivers, this names the VM served under ``<namespace>.<name>``.
    system: str = None
    #: The Redfish action served (``'InsertMedia'``...), and its
    #: parameters (the parsed JSON body; None when there is none).
    action: str = None
    parameters: dict = None
    #: The If-Match precondition held for its first write
    #: (:class:`.preconditions.Held`), taken by that write.
    held: object = None
    #: The errors of the namespaces the Systems collection left out.
    unlisted: tuple = ()
    #: Reads memoized for this request (:mod:`.snapshot`, :mod:`.lookup`).
    memo: dict = dataclasses.field(default_factory=dict)

    def reaches(self, namespace, labels=None):
        """Whether the account may see a VM of ``namespace``/``labels``."""
        return self.account is None or \
            self.account.reaches(namespace, labels)


def current():
    """The bound :class:`Request`, else a fresh one."""
    found = _CURRENT.get(None)
    return found if found is not None else Request()


def bind(request):
    """Make ``request`` current; returns the token for :func:`unbind`."""
    return _CURRENT.set(request)


def unbind(token):
    """Undo the :func:`bind` that returned ``token``."""
    _CURRENT.reset(token)


@contextlib.contextmanager
def bound(request):
    """``with bound(request):`` driver calls see ``request``."""
    token = bind(request)
    try:
        yield request
    finally:
        unbind(token)
