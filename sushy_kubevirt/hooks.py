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

"""Run the handlers of :data:`sushy_kubevirt.plugin.EXTENSION_POINTS`.

A :class:`Point` declares one extension point and its handlers.
:func:`install` adds the handlers to ``main.app`` with Flask's public
hooks: a ``before_request`` hook binds the drivers' request object
(:mod:`sushy_kubevirt.redfish.binding`, unbound by a
``teardown_request`` hook) and runs an endpoint's ``before`` handler (a
response it returns replaces the stock view), an ``after_request`` hook
runs its ``after`` handlers on a stock 200 GET or HEAD (first of all,
:func:`sushy_kubevirt.redfish.access.authorize` refuses what the
account may not do, by the privileges every route declares), our
blueprint
(:data:`sushy_kubevirt.redfish.base.blueprint`) serves what sushy-tools
has no route for, and error handlers render every error of a plugin
driver with a Base registry MessageId. Each handler acts only when
``SUSHY_EMULATOR_SYSTEMS_DRIVER`` (or ``..._VMEDIA_DRIVER``) names a
driver with the method it needs; every other driver keeps the stock
behaviour.
"""

import dataclasses

import flask
from sushy_tools import error
from werkzeug import exceptions

from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import binding
from sushy_kubevirt.redfish import eventservice


#: Set when a ``base.EVERY`` before handler answered: the answer is final
#: (the endpoint's after handlers edit the stock view's).
_ANSWERED = 'sushy_kubevirt.answered'


@dataclasses.dataclass(frozen=True)
class Point:
    """One sushy-tools extension point and what the plugin adds there."""

    #: ``Application.<member>``, ``<module>.<function>`` of sushy-tools'
    #: emulator package, or a Flask endpoint name.
    name: str
    #: What the plugin adds or changes there.
    adds: str
    #: For an endpoint: its URL rule in sushy-tools.
    rule: str = None
    #: For an endpoint: HTTP method -> the privilege it needs
    #: (:mod:`sushy_kubevirt.accounts.privileges`), for the methods the
    #: plugin extends.
    privileges: dict = dataclasses.field(default_factory=dict)
    #: For an endpoint: ``fn(app, **view_args)`` run before the stock view;
    #: a response it returns replaces the stock one (one named ``check_*``
    #: only checks the request and returns None).
    before: object = None
    #: ``fn(app, response)`` handlers, run in order: for an endpoint, on a
    #: stock 200 GET or HEAD; for ``base.EVERY``, on every response.
    after: tuple = ()

    @property
    def methods(self):
        return tuple(self.privileges)


def member(name, adds):
    """``Application.<name>``, replaced on the class."""
    return Point('Application.' + name, adds)


def endpoint(name, rule, needs, adds, before=None, after=()):
    """An endpoint with a ``before`` handler or ``after`` handlers."""
    if callable(after):
        after = (after,)
    if bool(before) == bool(after):
        raise ValueError('%s: give a before or after handlers' % name)
    return Point(name, adds, rule, needs, before, tuple(after))


def unchanged(name, rule, needs):
    """An endpoint sushy-tools serves as it is, and its privileges."""
    return Point(name, 'served by sushy-tools unchanged', rule, needs)


def every(adds, before=None, after=()):
    """Hooks for every request (any method, any status).

    ``before(app, **view_args)`` and ``after(app, response)``.
    """
    return Point(base.EVERY, adds, before=before, after=tuple(after))


def privilege_table(points):
    """``{(endpoint, method): privilege}`` of ``points`` and our routes."""
    needs = {(point.name, method): privilege for point in points
             if point.rule for method, privilege in point.privileges.items()}
    needs.update(((base.blueprint.name + '.' + route.handler.__name__,
                   method), privilege) for route in base.ROUTES
                 for method, privilege in route.privileges.items())
    return needs


def install(app, points, stock_error_handler):
    """Add the hooks for ``points`` to ``app``.

    :param stock_error_handler: a function returning sushy-tools' error
        handler (``main.py`` defines it after the first hook point).
    """
    needs = privilege_table(points)
    befores = {(point.name, method): point.before for point in points
               if point.before for method in point.methods}
    afters = {point.name: point.after for point in points
              if point.after and point.name != base.EVERY}
    every_before = [p.before for p in points
                    if p.name == base.EVERY and p.before]
    every_after = [handler for p in points if p.name == base.EVERY
                   for handler in p.after]

    def before_request():
        request = flask.request
        binding.begin()
        if base.plugin_driver(app):
            base.limit_body(request)
            # Each process joins the event sender election at its first
            # request (gunicorn forks after import: no thread before).
            eventservice.event_service_of(app)
            access.authorize(app, needs)
        for handler in every_before:
            response = handler(app, **(request.view_args or {}))
            if response is not None:
                request.environ[_ANSWERED] = True
                return response
        handler = befores.get((request.endpoint, request.method))
        if handler is not None:
            return handler(app, **request.view_args)
        return None

    def after_request(response):
        request = flask.request
        handlers = () if request.environ.get(_ANSWERED) else \
            afters.get(request.endpoint, ())
        if request.method in ('GET', 'HEAD') and \
                response.status_code == 200:
            for handler in handlers:
                handler(app, response)
        for handler in every_after:
            handler(app, response)
        return response

    def handle_error(exc):
        if not base.plugin_driver(app):
            return stock_error_handler()(exc)
        if isinstance(exc, error.AliasAccessError):
            return base.alias_redirect(exc.args[0])
        code = getattr(exc, 'code', None) or 500
        app.logger.debug('Request failed with %s: %s',
                         type(exc).__name__, exc)
        return base.error_response(exc, code)

    app.logger.addFilter(base.RedactCredentials())
    app.json = base.JSONProvider(app)
    app.request_class = base.Request
    app.before_request(before_request)
    app.after_request(after_request)
    app.teardown_request(binding.end)
    app.register_error_handler(error.FishyError, handle_error)
    app.register_error_handler(exceptions.HTTPException, handle_error)
    flask.Flask.register_blueprint(app, base.blueprint)
