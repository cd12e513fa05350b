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

"""Plug sushy-tools drivers in by name, from stevedore entry points.

Importing this module (``import sushy_kubevirt.plugin`` in the emulator's
config file) extends the *unmodified* sushy-tools at the points listed in
:data:`EXTENSION_POINTS`, the one table of everything the plugin relies on:

* members of ``sushy_tools.emulator.main.Application``, replaced on the
  class (under WSGI the config file runs while ``main.py`` is still being
  imported, before ``main.app`` exists);
* endpoints of ``main.app``, extended through Flask's public request hooks
  (``before_request``, ``after_request``, ``register_error_handler``) and a
  blueprint of our own (:mod:`sushy_kubevirt.routes`).

``SUSHY_EMULATOR_SYSTEMS_DRIVER`` / ``SUSHY_EMULATOR_VMEDIA_DRIVER`` name a
driver of the ``sushy_tools.emulator.systems`` / ``.vmedia`` entry-point
namespaces; without them sushy-tools behaves exactly as before.

Every point is checked against the running sushy-tools before the emulator
serves (:func:`check_extension_points`): by ``Application.run`` for
``sushy-emulator`` and ``sushy-kubevirt-emulator``, and when a WSGI server
such as gunicorn fetches ``main.app`` (the module's class gains an ``app``
property, the documented way to customise module attribute access). A
missing point stops start-up with a message naming the sushy-tools version
and the point. Importing starts no thread and opens no connection
(gunicorn forks after import).
"""

import dataclasses
import functools
import importlib.metadata
import sys
import threading
import types

from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exception
from sushy_tools.emulator import api_utils
from sushy_tools.emulator import main

from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import bios
from sushy_kubevirt.redfish import links
from sushy_kubevirt.redfish import storage
from sushy_kubevirt import routes

SYSTEMS_KEY = 'SUSHY_EMULATOR_SYSTEMS_DRIVER'
VMEDIA_KEY = routes.VMEDIA_KEY
SYSTEMS_NAMESPACE = 'sushy_tools.emulator.systems'
VMEDIA_NAMESPACE = 'sushy_tools.emulator.vmedia'
_NAMESPACES = {SYSTEMS_KEY: SYSTEMS_NAMESPACE, VMEDIA_KEY: VMEDIA_NAMESPACE}
#: Systems driver method building the ``Application.indicators`` driver.
INDICATORS_FACTORY = 'indicators_driver'
_BUILT = ('systems', 'vmedia', 'indicators')

#: Class attribute holding the original Application members we replaced.
_ORIGINALS = '_sushy_kubevirt_originals'
#: Prefix of our entries in ``Application._cache``.
_CACHE_PREFIX = 'sushy_kubevirt.'
#: Attribute marking an Application instance whose hooks are installed.
_HOOKED = '_sushy_kubevirt_hooked'
#: Name of the points that apply to every request (Flask's own hooks).
EVERY = routes.EVERY
#: The sushy-tools modules whose functions are extension points.
_MODULES = {'main': main, 'api_utils': api_utils}

# Serialises building the drivers (request threads race on first use).
_LOCK = threading.RLock()


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
    #: For an endpoint: the HTTP methods the plugin extends.
    methods: tuple = ()
    #: For an endpoint: ``fn(app, **view_args)`` run before the stock view;
    #: a response it returns replaces the stock one.
    before: object = None
    #: For an endpoint: ``fn(app, response)`` run on a stock 200 GET.
    after: object = None


def _member(name, adds):
    return Point('Application.' + name, adds)


def _endpoint(name, rule, methods, adds, before=None, after=None):
    return Point(name, adds, rule, methods, before, after)


def _then(*handlers):
    """One ``after`` handler running ``handlers`` in order."""
    def after(app, response):
        for handler in handlers:
            handler(app, response)
    return after


def _every(adds, before=None, after=None):
    """Hooks for every request (any method, any status).

    ``before(app, **view_args)`` and ``after(app, response)``.
    """
    return Point(EVERY, adds, before=before, after=after)


#: Every point of sushy-tools the plugin relies on.
EXTENSION_POINTS = (
    _member('systems', 'the systems driver named by %s, loaded from '
            'entry points' % SYSTEMS_KEY),
    _member('vmedia', 'the virtual-media driver named by %s' % VMEDIA_KEY),
    _member('indicators', "System LEDs from the systems driver's "
            'indicators_driver(), when it has one'),
    _member('configure', 'drops the drivers built from the previous config; '
            'wraps wsgi_app'),
    _member('wsgi_app', "replaced (after sushy-tools' RedfishAuthMiddleware "
            'wrapped it) by sushy_kubevirt.redfish.auth: session tokens '
            'and Basic for the kubevirt driver, the stock middleware for '
            'other drivers'),
    _member('run', 'checks the extension points, the driver settings and '
            'the cluster before serving'),
    _member('register_blueprint', 'first call (main.py, right after '
            'Application()): installs the request hooks below'),
    _member('render_template', 'renders the stock templates the hooks '
            'extend'),
    Point('main.all_exception_handler', 'kept for other drivers and for '
          "alias redirects; errors of a plugin driver get Base registry "
          'MessageIds (sushy_kubevirt.messages)'),
    Point('api_utils.instance_denied', 'SUSHY_EMULATOR_ALLOWED_INSTANCES '
          'is honoured by the routes the plugin handles itself'),
    _endpoint('root_resource', '/redfish/v1/', ('GET',), 'links the '
              'EventService when SUSHY_EMULATOR_KUBEVIRT_EVENTS_NAMESPACE '
              'is set; Links.Sessions and the SessionService; no '
              'UpdateService',
              after=_then(routes.root_body, routes.service_root_body)),
    _endpoint('system_collection_resource', '/redfish/v1/Systems',
              ('GET',), 'lists the namespaces that can be read; each one '
              'left out is named in @Message.ExtendedInfo',
              after=routes.systems_collection_body),
    _endpoint('system_resource', '/redfish/v1/Systems/<identity>',
              ('GET', 'PATCH'), 'GET: the BootSourceOverrideEnabled of the '
              'driver, HealthRollup; PATCH: validated, then applied by the '
              'driver with the override passed as an argument',
              before=routes.patch_system, after=routes.system_body),
    _endpoint('system_reset_action',
              '/redfish/v1/Systems/<identity>/Actions/ComputerSystem.Reset',
              ('POST',), 'the body is checked: one string ResetType, no '
              'other parameter', before=routes.check_reset_body),
    _endpoint('secure_boot', '/redfish/v1/Systems/<identity>/SecureBoot',
              ('PATCH',), 'the body is checked: one boolean '
              'SecureBootEnable', before=routes.check_secure_boot_patch),
    _endpoint('manager_resource', '/redfish/v1/Managers/<identity>',
              ('GET',), "ServiceEntryPointUUID is the service root's UUID; "
              'ManagerForChassis names the Chassis holding its System',
              after=_then(routes.manager_body, links.manager_body)),
    _endpoint('processor',
              '/redfish/v1/Systems/<identity>/Processors/<processor_id>',
              ('GET',), 'TotalCores and TotalThreads are integers',
              after=routes.processor_body),
    _every('for plugin drivers: the OData-Version header, no mockup '
           'copyright annotation, Redfish JSON for every error body; '
           'ETag, If-None-Match (304) and If-Match (412) under a System',
           before=routes.precondition, after=routes.finish),
    _endpoint('manager_resource', '/redfish/v1/Managers/<identity>',
              ('PATCH',), 'outside the full feature set: 405 with Allow '
              '(sushy-tools raises an error class it lacks: a 500)',
              before=routes.patch_manager),
    _endpoint('processors_collection',
              '/redfish/v1/Systems/<identity>/Processors', ('GET',),
              '@odata.id without the trailing slash',
              after=routes.processors_body),
    _endpoint('CertificateService.certificate_service_resource',
              '/redfish/v1/CertificateService', ('GET',),
              'no ActionInfo link (sushy-tools serves none)',
              after=routes.certificate_service_body),
    _endpoint('UpdateService.update_service_resource',
              '/redfish/v1/UpdateService/', ('GET',),
              '404: not offered (SimpleUpdate cannot update a VM)',
              before=routes.not_offered),
    _endpoint('UpdateService.update_service_simple_update',
              '/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate',
              ('POST',), '404: not offered', before=routes.not_offered),
    _endpoint('simple_task_service', '/redfish/v1/TaskService', ('GET',),
              '404: no tasks are tracked', before=routes.not_offered),
    _endpoint('simple_task', '/redfish/v1/TaskService/Tasks/42', ('GET',),
              '404: no tasks are tracked', before=routes.not_offered),
    _endpoint('VirtualMedia.virtual_media_insert',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
              '/Actions/VirtualMedia.InsertMedia', ('POST',),
              'a body that is not a JSON object is a 400',
              before=routes.check_insert_body),
    _endpoint('VirtualMedia.virtual_media_resource',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>',
              ('GET',), "the vmedia driver's get_device_status() (import "
              'Status, Oem)', after=routes.virtual_media_body),
    _endpoint('VirtualMedia.virtual_media_patch',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>',
              ('PATCH',), 'the body is checked: one boolean '
              'VerifyCertificate (sushy-tools answers 500 to a body that '
              'is not a JSON object)', before=routes.check_vmedia_patch),
    _endpoint('storage_collection', '/redfish/v1/Systems/<identity>/Storage',
              ('GET',), "served from the VM's disks (one Storage per bus)",
              before=storage.serve_collection),
    _endpoint('storage',
              '/redfish/v1/Systems/<identity>/Storage/<storage_id>',
              ('GET',), 'one bus: its controller, drives and volumes',
              before=storage.serve_storage),
    _endpoint('drive_resource', '/redfish/v1/Systems/<identity>/Storage'
              '/<stg_id>/Drives/<drv_id>', ('GET',),
              'a disk (CD-ROMs are optical drives)',
              before=storage.serve_drive),
    _endpoint('volumes_collection', '/redfish/v1/Systems/<identity>'
              '/Storage/<storage_id>/Volumes', ('GET', 'POST'),
              'the non-optical disks of a bus; POST is a 405',
              before=storage.serve_volumes),
    _endpoint('volume', '/redfish/v1/Systems/<identity>/Storage/<stg_id>'
              '/Volumes/<vol_id>', ('GET',), 'a disk as a raw volume',
              before=storage.serve_volume),
    _endpoint('chassis_resource', '/redfish/v1/Chassis/<identity>',
              ('GET', 'PATCH'), 'GET: ManagedBy: every Manager in the '
              'Chassis; no UUID (Chassis.v1_5_0 has none); PATCH: '
              'IndicatorLED checked, Redfish errors',
              before=routes.patch_chassis,
              after=_then(links.chassis_body, routes.chassis_body)),
    _endpoint('thermal_resource', '/redfish/v1/Chassis/<identity>/Thermal',
              ('GET',), "RelatedItem: the System's first processor; "
              'SensorNumber is an integer',
              after=_then(links.thermal_body, routes.thermal_body)),
    _endpoint('bios', '/redfish/v1/Systems/<identity>/BIOS', ('GET',),
              'a 308 to the schema URI .../Bios (our blueprint)',
              before=bios.redirect),
    _endpoint('bios_settings', '/redfish/v1/Systems/<identity>/BIOS'
              '/Settings', ('GET', 'PATCH'), 'a 308 to .../Bios/Settings',
              before=bios.redirect),
    _endpoint('system_reset_bios', '/redfish/v1/Systems/<identity>/BIOS'
              '/Actions/Bios.ResetBios', ('POST',),
              'a 308 to .../Bios/Actions/Bios.ResetBios',
              before=bios.redirect),
    _endpoint('bios_attribute_registry_file',
              '/redfish/v1/Registries/BiosAttributeRegistry.v1_0_0',
              ('GET',), 'the file of the BIOS AttributeRegistry we serve',
              before=bios.serve_registry_file),
    _endpoint('bios_registry', '/redfish/v1/Systems/Bios/BiosRegistry',
              ('GET',), 'our AttributeRegistry: types, allowed values, '
              'read-only flags', before=bios.serve_registry),
)


class DriverNotFound(RuntimeError):
    """A configured driver name is not installed."""


class IncompatibleSushyTools(RuntimeError):
    """The running sushy-tools lacks an extension point the plugin needs."""


def installed(namespace):
    """Names registered in an entry-point namespace (nothing is loaded)."""
    return sorted({entry.name for entry in
                   importlib.metadata.entry_points(group=namespace)})


def driver_class(config, key):
    """The class registered under ``config[key]``, or None if unset.

    :raises DriverNotFound: naming the key and the installed drivers.
    """
    name = config.get(key)
    if not name:
        return None
    return _load(key, name)


@functools.lru_cache(maxsize=None)
def _load(key, name):
    # Entry points do not change while the process runs; a stevedore
    # lookup costs about a millisecond, and routes read the drivers
    # many times per request.
    namespace = _NAMESPACES[key]
    try:
        return stevedore_driver.DriverManager(
            namespace, name, on_load_failure_callback=_reraise).driver
    except stevedore_exception.NoMatches:
        names = ', '.join(installed(namespace)) or 'none'
        raise DriverNotFound(
            '%s = %r is not an installed driver; installed in entry-point '
            'namespace %s: %s (leave %s unset for the built-in drivers)'
            % (key, name, namespace, names, key)) from None


def _reraise(manager, entry_point, exc):
    raise exc


def validate(config):
    """Check that every configured driver name resolves to a class."""
    for key in _NAMESPACES:
        driver_class(config, key)


def _sushy_tools_version():
    try:
        return importlib.metadata.version('sushy-tools')
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'


def missing_points(app):
    """The names of the extension points ``app`` lacks, in table order."""
    rules = {}
    for rule in app.url_map.iter_rules():
        rules.setdefault(rule.endpoint, []).append(rule)
    missing = []
    for point in EXTENSION_POINTS:
        owner, _, member = point.name.partition('.')
        if point.name == EVERY:
            present = True
        elif owner == 'Application':
            present = (member in _originals()
                       and hasattr(main.Application, member))
        elif owner in _MODULES and not point.rule:
            present = callable(vars(_MODULES[owner]).get(member))
        else:
            present = point.name in app.view_functions and any(
                rule.rule == point.rule
                and set(point.methods) <= set(rule.methods)
                for rule in rules.get(point.name, ()))
        if not present:
            missing.append(point.name + (
                ' (%s %s)' % ('/'.join(point.methods), point.rule)
                if point.rule else ''))
    return missing


def check_extension_points(app):
    """Stop unless ``app`` has every point of :data:`EXTENSION_POINTS`.

    :raises IncompatibleSushyTools: naming the version and the points.
    """
    missing = missing_points(app)
    if missing:
        raise IncompatibleSushyTools(
            'sushy-kubevirt cannot extend sushy-tools %s: it lacks %s. '
            'Install a sushy-tools release this plugin supports (see '
            'setup.cfg)' % (_sushy_tools_version(), '; '.join(missing)))


def _built(app, name, make):
    """``make()`` once per configuration, kept in ``app._cache``.

    sushy-emulator loads its config twice (``SUSHY_EMULATOR_CONFIG`` when
    ``main`` is imported, then ``--config``): :func:`_configure` drops what
    was built from the first. ``app._cache`` is what sushy-tools' memoize
    uses, so resetting it drops our drivers too.
    """
    cache = app.__dict__.setdefault('_cache', {})
    built = cache.get(_CACHE_PREFIX + name)
    if built is None:
        with _LOCK:
            built = cache.get(_CACHE_PREFIX + name)
            if built is None:
                built = cache[_CACHE_PREFIX + name] = make()
    return built


def _systems(self):
    cls = driver_class(self.config, SYSTEMS_KEY)
    if cls is None:
        return _original('systems').fget(self)

    def make():
        result = cls.initialize(self.config, self.logger)()
        self.logger.debug('Initialized system resource backed by %s '
                          'driver', result.driver)
        return result
    return _built(self, 'systems', make)


def _vmedia(self):
    cls = driver_class(self.config, VMEDIA_KEY)
    if cls is None:
        return _original('vmedia').fget(self)
    return _built(self, 'vmedia',
                  lambda: cls(self.config, self.logger, self.systems))


def _indicators(self):
    cls = driver_class(self.config, SYSTEMS_KEY)
    stock = _original('indicators').fget
    if cls is None or not hasattr(cls, INDICATORS_FACTORY):
        return stock(self)
    return _built(self, 'indicators', lambda: getattr(
        self.systems, INDICATORS_FACTORY)(lambda: stock(self)))


def _configure(self, *args, **kwargs):
    with _LOCK:
        cache = self.__dict__.get('_cache', {})
        for name in _BUILT:
            cache.pop(_CACHE_PREFIX + name, None)
        result = _original('configure')(self, *args, **kwargs)
        _wrap_wsgi_app(self)
        return result


def _wrap_wsgi_app(app):
    auth.wrap(app, lambda: routes.session_store(app))


def check(app, connect=False):
    """Fail fast on a wrong driver name or driver setting.

    Builds the configured systems driver (its ``initialize`` validates the
    settings) and, with ``connect``, calls its ``check()`` if it has one
    (e.g. the cluster is reachable and the namespaces readable).
    """
    validate(app.config)
    if app.config.get(SYSTEMS_KEY):
        systems = app.systems
        if connect and hasattr(systems, 'check'):
            systems.check()


def _run(self, *args, **kwargs):
    try:
        check_extension_points(self)
        check(self, connect=True)
    except (DriverNotFound, IncompatibleSushyTools, ValueError) as exc:
        raise SystemExit('sushy-emulator: %s' % exc)
    return _original('run')(self, *args, **kwargs)


def _register_blueprint(self, *args, **kwargs):
    # main.py registers its blueprints right after ``app = Application()``
    # has loaded SUSHY_EMULATOR_CONFIG: the first point where a WSGI server
    # can be stopped from starting with a wrong setting. Nothing connects.
    hook(self)
    check(self)
    return _original('register_blueprint')(self, *args, **kwargs)


def hook(app):
    """Install the request hooks on ``app`` once."""
    if vars(app).get(_HOOKED):
        return
    setattr(app, _HOOKED, True)
    _wrap_wsgi_app(app)
    routes.install(app, SYSTEMS_KEY, EXTENSION_POINTS,
                   lambda: vars(main)['all_exception_handler'])


class _CheckedModule(types.ModuleType):
    """``main``'s module class: fetching ``main.app`` checks the points."""

    @property
    def app(self):
        app = vars(self)['app']
        if not vars(app).get('_sushy_kubevirt_checked'):
            check_extension_points(app)
            app._sushy_kubevirt_checked = True
        return app

    @app.setter
    def app(self, value):
        vars(self)['app'] = value


def _original(name):
    return _originals()[name]


def _originals():
    return getattr(main.Application, _ORIGINALS, {})


def install():
    """Patch ``main.Application`` once; later calls do nothing."""
    cls = main.Application
    if _ORIGINALS in vars(cls):
        return
    originals = {name: getattr(cls, name) for name in (
        'systems', 'vmedia', 'indicators', 'configure', 'run',
        'register_blueprint', 'render_template', 'wsgi_app')
        if hasattr(cls, name)}
    setattr(cls, _ORIGINALS, originals)
    cls.systems = property(_systems)
    cls.vmedia = property(_vmedia)
    cls.indicators = property(_indicators)
    cls.configure = _configure
    cls.run = _run
    cls.register_blueprint = _register_blueprint
    module = sys.modules[main.__name__]
    app = vars(module).get('app')
    if app is not None:
        # Imported after main.py finished (``sushy-emulator --config``).
        hook(app)
    else:
        module.__class__ = _CheckedModule


install()
