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
  (:mod:`sushy_kubevirt.hooks`) by the handlers of
  :mod:`sushy_kubevirt.redfish`, one module per Redfish resource, whose
  blueprint also serves what sushy-tools has no route for.

Each endpoint, and each route of the blueprint, declares the Redfish
privilege every method needs (:mod:`sushy_kubevirt.accounts.privileges`),
as does each route sushy-tools serves unchanged (:data:`UNCHANGED_ROUTES`);
:mod:`sushy_kubevirt.redfish.access` refuses a method to an account
whose role lacks it. :func:`uri_table` lists them with the module that
answers.
``SUSHY_EMULATOR_SYSTEMS_DRIVER`` / ``SUSHY_EMULATOR_VMEDIA_DRIVER`` name
drivers (:mod:`sushy_kubevirt.loader`); without them sushy-tools behaves
exactly as before.

Every point is checked against the running sushy-tools before the emulator
serves (:func:`check_extension_points`): by ``Application.run`` for
``sushy-emulator`` and ``sushy-kubevirt-emulator``, and when a WSGI server
such as gunicorn fetches ``main.app`` (the module's class gains an ``app``
property, the documented way to customise module attribute access). A
missing point stops start-up with a message naming the sushy-tools version
and the point. Importing starts no thread and opens no connection
(gunicorn forks after import); the watch cache starts when the process
that serves boots (:mod:`sushy_kubevirt.boot`).
"""

import importlib.metadata
import sys
import types

from sushy_tools.emulator import api_utils
from sushy_tools.emulator import main

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt import boot
from sushy_kubevirt import config
from sushy_kubevirt import hooks
from sushy_kubevirt.kube import client
from sushy_kubevirt import loader
from sushy_kubevirt.redfish import access
from sushy_kubevirt.redfish import accountservice
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import bios
from sushy_kubevirt.redfish import chassis
from sushy_kubevirt.redfish import etags
from sushy_kubevirt.redfish import eventservice
from sushy_kubevirt.redfish import expandbound
from sushy_kubevirt.redfish import health
from sushy_kubevirt.redfish import logservices
from sushy_kubevirt.redfish import managernetwork
from sushy_kubevirt.redfish import managers
from sushy_kubevirt.redfish import memory
from sushy_kubevirt.redfish import metrics
from sushy_kubevirt.redfish import networkadapters
from sushy_kubevirt.redfish import odata
from sushy_kubevirt.redfish import processors
from sushy_kubevirt.redfish import query
from sushy_kubevirt.redfish import rendered
from sushy_kubevirt.redfish import responses
from sushy_kubevirt.redfish import root
from sushy_kubevirt.redfish import services
from sushy_kubevirt.redfish import sessions
from sushy_kubevirt.redfish import sse
from sushy_kubevirt.redfish import storage
from sushy_kubevirt.redfish import systems
from sushy_kubevirt.redfish import tasks
from sushy_kubevirt.redfish import updateservice
from sushy_kubevirt.redfish import virtualmedia

#: Attribute marking an Application instance whose hooks are installed.
_HOOKED = '_sushy_kubevirt_hooked'
#: The sushy-tools modules whose functions are extension points.
_MODULES = {'main': main, 'api_utils': api_utils}
#: The modules that declare routes of our blueprint (:data:`base.ROUTES`):
#: imported so that the blueprint has them when it is registered.
ROUTE_MODULES = (accountservice, bios, eventservice, health, logservices,
                 managernetwork, memory, metrics, networkadapters, odata,
                 sessions, sse, tasks, updateservice)

#: Appended to a start-up error that finds no Kubernetes API server.
_SIMULATE_HINT = ('\nNo cluster at hand? sushy-kubevirt-emulator --simulate N '
                  'serves N VMs of an embedded simulated cluster.')

LOGIN = privileges.READ
COMPONENT = privileges.COMPONENT
ACTION = privileges.COMPONENT_ACTION


EVERY = base.EVERY
Point = hooks.Point
_member, _endpoint, _every = hooks.member, hooks.endpoint, hooks.every

#: Every point of sushy-tools the plugin relies on.
EXTENSION_POINTS = (
    _member('systems', 'the systems driver named by %s, loaded from '
            'entry points' % config.SYSTEMS_DRIVER_KEY),
    _member('vmedia', 'the virtual-media driver named by %s'
            % config.VMEDIA_DRIVER_KEY),
    _member('indicators', "System LEDs from the systems driver's "
            'indicators_driver(), when it has one'),
    _member('chassis', "one Chassis per namespace from the systems "
            "driver's chassis_driver(), when it has one"),
    _member('configure', 'drops the drivers built from the previous config; '
            'wraps wsgi_app'),
    _member('wsgi_app', "replaced (after sushy-tools' RedfishAuthMiddleware "
            'wrapped it) by sushy_kubevirt.redfish.auth: session tokens '
            'and Basic for the kubevirt driver, the stock middleware for '
            'other drivers; then sushy_kubevirt.redfish.rendered.Kept: a '
            'plain System GET is answered its kept bytes before Flask, '
            'and sushy_kubevirt.redfish.expandbound.Bound: a Systems '
            '$expand past its bound is refused before Flask'),
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
    _every('for plugin drivers: a request OData-Version other than 4.0 is '
           'a 412', before=responses.check_odata_version),
    _every('for plugin drivers: the query parameters of a GET (only, $skip, '
           '$top, $expand, $select); another $ parameter is a 501',
           before=query.check, after=(query.after,)),
    _every('for plugin drivers: the OData-Version header, no mockup '
           'copyright annotation, Redfish JSON for every error body; '
           'ETag, If-None-Match (304) and If-Match (412) under a System; '
           'Cache-Control; Allow and Link (describedby) on a GET',
           before=etags.check, after=(etags.after, responses.after)),
    _every('for plugin drivers: a System GET without a query is rendered '
           'once per ETag, then answered with the same bytes',
           before=rendered.answer, after=(rendered.keep,)),
    _endpoint('root_resource', '/redfish/v1/', {'GET': privileges.NO_AUTH},
              'links the EventService when SUSHY_EMULATOR_KUBEVIRT_EVENTS_'
              'NAMESPACE is set; Links.Sessions and the SessionService; '
              'the UpdateService and the TaskService (Tasks)',
              after=(eventservice.root_link, root.service_root_body)),
    _endpoint('system_collection_resource', '/redfish/v1/Systems', LOGIN,
              'lists the namespaces that can be read; each one left out '
              'is named in @Message.ExtendedInfo',
              after=systems.collection_body),
    _endpoint('system_resource', '/redfish/v1/Systems/<identity>', LOGIN,
              'the BootSourceOverrideEnabled of the driver, HealthRollup, '
              'BootProgress; LogServices',
              after=(systems.system_body, logservices.system_link)),
    _endpoint('system_resource', '/redfish/v1/Systems/<identity>',
              {'PATCH': privileges.CONFIGURE_COMPONENTS}, 'validated, then '
              'applied by the driver with the override passed as an '
              'argument', before=systems.patch_system),
    _endpoint('system_reset_action',
              '/redfish/v1/Systems/<identity>/Actions/ComputerSystem.Reset',
              ACTION, 'the body is checked: one string ResetType, no '
              'other parameter', before=systems.check_reset_body),
    _endpoint('secure_boot', '/redfish/v1/Systems/<identity>/SecureBoot',
              {'PATCH': privileges.CONFIGURE_COMPONENTS}, 'the body is '
              'checked: one boolean SecureBootEnable',
              before=systems.check_secure_boot_patch),
    _endpoint('processors_collection',
              '/redfish/v1/Systems/<identity>/Processors', LOGIN,
              '@odata.id without the trailing slash',
              after=processors.collection_body),
    _endpoint('processor',
              '/redfish/v1/Systems/<identity>/Processors/<processor_id>',
              LOGIN, 'TotalCores and TotalThreads are integers',
              after=processors.processor_body),
    _endpoint('VirtualMedia.virtual_media_resource',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>',
              LOGIN, "the vmedia driver's get_device_status() (import "
              'Status, Oem)', after=virtualmedia.device_body),
    _endpoint('VirtualMedia.virtual_media_patch',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>',
              {'PATCH': privileges.CONFIGURE_COMPONENTS}, 'the body is '
              'checked: one boolean VerifyCertificate (sushy-tools answers '
              '500 to a body that is not a JSON object)',
              before=virtualmedia.check_patch),
    _endpoint('VirtualMedia.virtual_media_insert',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
              '/Actions/VirtualMedia.InsertMedia', ACTION,
              'the parameters are checked (TransferProtocolType against '
              'the URL, VerifyCertificate a boolean, ...): a 400 names the '
              'first problem', before=virtualmedia.check_insert_body),
    _endpoint('VirtualMedia.virtual_media_add_certificate',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
              '/Certificates', {'POST': privileges.CONFIGURE_COMPONENTS},
              'the body is checked: the strings CertificateString and '
              'CertificateType PEM (sushy-tools answers 500 to a body that '
              'is not a JSON object)',
              before=virtualmedia.check_certificate_body),
    _endpoint('VirtualMedia.virtual_media_eject',
              '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
              '/Actions/VirtualMedia.EjectMedia', ACTION,
              'a body that is not JSON is a 400',
              before=virtualmedia.check_eject_body),
    _endpoint('storage_collection', '/redfish/v1/Systems/<identity>/Storage',
              LOGIN, "served from the VM's disks (one Storage per bus)",
              before=storage.serve_collection),
    _endpoint('storage',
              '/redfish/v1/Systems/<identity>/Storage/<storage_id>',
              LOGIN, 'one bus: its controller, drives and volumes',
              before=storage.serve_storage),
    _endpoint('drive_resource', '/redfish/v1/Systems/<identity>/Storage'
              '/<stg_id>/Drives/<drv_id>', LOGIN,
              'a disk (CD-ROMs are optical drives)',
              before=storage.serve_drive),
    _endpoint('volumes_collection', '/redfish/v1/Systems/<identity>'
              '/Storage/<storage_id>/Volumes',
              {'GET': privileges.LOGIN,
               'POST': privileges.CONFIGURE_COMPONENTS},
              'the non-optical disks of a bus; POST is a 405',
              before=storage.serve_volumes),
    _endpoint('volume', '/redfish/v1/Systems/<identity>/Storage/<stg_id>'
              '/Volumes/<vol_id>', LOGIN, 'a disk as a raw volume',
              before=storage.serve_volume),
    _endpoint('bios', '/redfish/v1/Systems/<identity>/BIOS', LOGIN,
              'a 308 to the schema URI .../Bios (our blueprint)',
              before=bios.redirect),
    _endpoint('bios_settings', '/redfish/v1/Systems/<identity>/BIOS'
              '/Settings', COMPONENT, 'a 308 to .../Bios/Settings',
              before=bios.redirect),
    _endpoint('system_reset_bios', '/redfish/v1/Systems/<identity>/BIOS'
              '/Actions/Bios.ResetBios', ACTION,
              'a 308 to .../Bios/Actions/Bios.ResetBios',
              before=bios.redirect),
    _endpoint('bios_attribute_registry_file',
              '/redfish/v1/Registries/BiosAttributeRegistry.v1_0_0',
              LOGIN, 'the file of the BIOS AttributeRegistry we serve',
              before=bios.serve_registry_file),
    _endpoint('bios_registry', '/redfish/v1/Systems/Bios/BiosRegistry',
              LOGIN, 'our AttributeRegistry: types, allowed values, '
              'read-only flags', before=bios.serve_registry),
    _endpoint('manager_resource', '/redfish/v1/Managers/<identity>',
              LOGIN, "ServiceEntryPointUUID is the service root's UUID; "
              'ManagerForChassis names the Chassis holding its System; '
              'LogServices, NetworkProtocol and EthernetInterfaces',
              after=(managers.manager_body, logservices.manager_link,
                     managernetwork.manager_links)),
    _endpoint('manager_resource', '/redfish/v1/Managers/<identity>',
              {'PATCH': privileges.CONFIGURE_MANAGER}, 'outside the full '
              'feature set: 405 with Allow (sushy-tools raises an error '
              'class it lacks: a 500)', before=managers.check_patch),
    _endpoint('chassis_resource', '/redfish/v1/Chassis/<identity>', LOGIN,
              "a namespace: its Systems and their Managers (sushy-tools "
              "gives all to the first Chassis), NetworkAdapters; 404 "
              "outside the account's namespaces",
              before=chassis.serve_chassis),
    _endpoint('chassis_resource', '/redfish/v1/Chassis/<identity>', LOGIN,
              'ManagedBy: every Manager in the Chassis; the Chassis type '
              'that has UUID', after=chassis.chassis_body),
    _endpoint('chassis_resource', '/redfish/v1/Chassis/<identity>',
              {'PATCH': privileges.CONFIGURE_COMPONENTS}, 'IndicatorLED '
              'checked, Redfish errors', before=chassis.check_patch),
    _endpoint('thermal_resource', '/redfish/v1/Chassis/<identity>/Thermal',
              LOGIN, "a sensor per System of the Chassis' namespace",
              before=chassis.serve_thermal),
    _endpoint('thermal_resource', '/redfish/v1/Chassis/<identity>/Thermal',
              LOGIN, "RelatedItem: the System's first processor; "
              'SensorNumber is an integer', after=chassis.thermal_body),
    _endpoint('CertificateService.certificate_service_resource',
              '/redfish/v1/CertificateService', LOGIN,
              'no ActionInfo link (sushy-tools serves none)',
              after=services.certificate_service_body),
    _endpoint('UpdateService.update_service_resource',
              '/redfish/v1/UpdateService/', LOGIN,
              'our UpdateService: SimpleUpdate of a BIOS or a BMC, the '
              'FirmwareInventory', before=updateservice.serve_service),
    _endpoint('UpdateService.update_service_simple_update',
              '/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate',
              ACTION, 'checked (ImageURI, Targets, TransferProtocol, '
              'credentials); 202 with a Task kept on the VM and its '
              'monitor', before=updateservice.simple_update),
    _endpoint('simple_task_service', '/redfish/v1/TaskService', LOGIN,
              'our TaskService: the firmware updates',
              before=tasks.serve_service),
    _endpoint('simple_task', '/redfish/v1/TaskService/Tasks/42', LOGIN,
              'a Task of ours (sushy-tools\' canned one is not served)',
              before=tasks.serve_canned_task),
)


_unchanged = hooks.unchanged
#: The other routes of sushy-tools, served as they are, and the privilege
#: each method needs (not required to exist: a release without one is
#: still extended).
UNCHANGED_ROUTES = (
    _unchanged('chassis_collection_resource', '/redfish/v1/Chassis', LOGIN),
    _unchanged('manager_collection_resource', '/redfish/v1/Managers',
               LOGIN),
    _unchanged('secure_boot', '/redfish/v1/Systems/<identity>/SecureBoot',
               LOGIN),
    _unchanged('ethernet_interfaces_collection',
               '/redfish/v1/Systems/<identity>/EthernetInterfaces', LOGIN),
    _unchanged('ethernet_interface',
               '/redfish/v1/Systems/<identity>/EthernetInterfaces/<nic_id>',
               LOGIN),
    _unchanged('simple_storage_collection',
               '/redfish/v1/Systems/<identity>/SimpleStorage', LOGIN),
    _unchanged('simple_storage', '/redfish/v1/Systems/<identity>'
               '/SimpleStorage/<simple_storage_id>', LOGIN),
    _unchanged('VirtualMedia.virtual_media_collection_resource',
               '/redfish/v1/Systems/<identity>/VirtualMedia', LOGIN),
    _unchanged('VirtualMedia.virtual_media_certificates',
               '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
               '/Certificates', LOGIN),
    _unchanged('VirtualMedia.virtual_media_get_certificate',
               '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
               '/Certificates/<cert_id>', LOGIN),
    _unchanged('VirtualMedia.virtual_media_delete_certificate',
               '/redfish/v1/Systems/<identity>/VirtualMedia/<device>'
               '/Certificates/<cert_id>',
               {'DELETE': privileges.CONFIGURE_COMPONENTS}),
    _unchanged('CertificateService.certificate_service_locations',
               '/redfish/v1/CertificateService/CertificateLocations', LOGIN),
    _unchanged('CertificateService.certificate_service_replace_certificate',
               '/redfish/v1/CertificateService/Actions/CertificateService.'
               'ReplaceCertificate', {'POST': privileges.CONFIGURE_MANAGER}),
    _unchanged('registry_file_collection', '/redfish/v1/Registries', LOGIN),
    _unchanged('message_registry_file', '/redfish/v1/Registries/Messages',
               LOGIN),
    _unchanged('message_registry', '/redfish/v1/Registries/Messages'
               '/Registry', LOGIN),
    _unchanged('static', '/static/<path:filename>', LOGIN),
)


class IncompatibleSushyTools(RuntimeError):
    """The running sushy-tools lacks an extension point the plugin needs."""


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
            present = (member in loader.originals()
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


def _module(handler):
    return '%s.py' % handler.__module__.replace('.', '/').partition('/')[2]


def _answer(point):
    """Where ``point``'s requests are answered, for :func:`uri_table`."""
    if not point.before and not point.after:
        return 'sushy-tools'
    if point.after:
        return 'sushy-tools, edited by %s' % ', '.join(
            sorted({_module(h) for h in point.after}))
    if point.before.__name__.startswith('check'):
        return 'sushy-tools, checked by %s' % _module(point.before)
    return _module(point.before)


def uri_table():
    """Each URI the plugin serves or extends, and where it is answered.

    Sorted ``(rule, {method: privilege}, answered by)`` rows, from
    :data:`EXTENSION_POINTS` and :data:`base.ROUTES`.
    """
    rows = [(p.rule, p.privileges, _answer(p))
            for p in EXTENSION_POINTS + UNCHANGED_ROUTES if p.rule]
    rows += [(r.rule, r.privileges, _module(r.handler)) for r in base.ROUTES]
    return sorted(rows, key=lambda row: (row[0], sorted(row[1])))


def _configure(self, *args, **kwargs):
    with loader.LOCK:
        loader.drop_built(self)
        result = loader.original('configure')(self, *args, **kwargs)
        _wrap_wsgi_app(self)
        return result


def _wrap_wsgi_app(app):
    needs = hooks.privilege_table(EXTENSION_POINTS)
    auth.wrap(app, lambda: sessions.session_store(app),
              lambda: access.accounts_of(app),
              lambda wsgi: rendered.Kept(app, expandbound.Bound(
                  app, wsgi, needs[(expandbound.ENDPOINT, 'GET')]),
                  needs[(rendered.ENDPOINT, 'GET')]))


def check(app, connect=False):
    """Fail fast on a wrong driver name or driver setting.

    Builds the configured systems driver (its ``initialize`` validates the
    settings) and, with ``connect``, calls its ``check()`` if it has one
    (e.g. the cluster is reachable and the namespaces readable).
    """
    loader.validate(app.config)
    if app.config.get(config.SYSTEMS_DRIVER_KEY):
        driver = app.systems
        if connect and hasattr(driver, 'check'):
            driver.check()


def check_before_serving(app):
    """The checks of ``Application.run``; SystemExit with the reason.

    Then the watch cache starts, and is awaited (bounded) before serving.
    """
    try:
        check_extension_points(app)
        check(app, connect=True)
    except (loader.DriverNotFound, IncompatibleSushyTools,
            ValueError) as exc:
        hint = _SIMULATE_HINT if isinstance(exc, client.NoCluster) else ''
        raise SystemExit('sushy-emulator: %s%s' % (exc, hint))
    boot.warm(app)


def _run(self, *args, **kwargs):
    check_before_serving(self)
    return loader.original('run')(self, *args, **kwargs)


def _register_blueprint(self, *args, **kwargs):
    # main.py registers its blueprints right after ``app = Application()``
    # has loaded SUSHY_EMULATOR_CONFIG: the first point where a WSGI server
    # can be stopped from starting with a wrong setting. Nothing connects.
    hook(self)
    check(self)
    return loader.original('register_blueprint')(self, *args, **kwargs)


def hook(app):
    """Install the request hooks on ``app`` once."""
    if vars(app).get(_HOOKED):
        return
    setattr(app, _HOOKED, True)
    _wrap_wsgi_app(app)
    responses.declare(hooks.privilege_table(EXTENSION_POINTS
                                            + UNCHANGED_ROUTES))
    hooks.install(app, EXTENSION_POINTS + UNCHANGED_ROUTES,
                  lambda: vars(main)['all_exception_handler'])


class _CheckedModule(types.ModuleType):
    """``main``'s module class: fetching ``main.app`` checks the points."""

    @property
    def app(self):
        app = vars(self)['app']
        if not vars(app).get('_sushy_kubevirt_checked'):
            check_extension_points(app)
            app._sushy_kubevirt_checked = True
            boot.app_fetched(app)
        return app

    @app.setter
    def app(self, value):
        vars(self)['app'] = value


def install():
    """Patch ``main.Application`` once; later calls do nothing."""
    cls = main.Application
    if loader.ORIGINALS in vars(cls):
        return
    originals = {name: getattr(cls, name) for name in (
        'systems', 'vmedia', 'indicators', 'chassis', 'configure', 'run',
        'register_blueprint', 'render_template', 'wsgi_app')
        if hasattr(cls, name)}
    setattr(cls, loader.ORIGINALS, originals)
    cls.systems = property(loader.systems)
    cls.vmedia = property(loader.vmedia)
    cls.indicators = property(loader.indicators)
    cls.chassis = property(loader.chassis)
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
