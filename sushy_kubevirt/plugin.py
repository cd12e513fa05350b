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

"""Load sushy-tools drivers by name from entry points.

Importing this module (``import sushy_kubevirt.plugin`` in the emulator's
config file) replaces the ``systems`` and ``vmedia`` properties of the
``sushy_tools.emulator.main.Application`` class. When
``SUSHY_EMULATOR_SYSTEMS_DRIVER`` / ``SUSHY_EMULATOR_VMEDIA_DRIVER`` name a
driver, it is loaded with stevedore from the ``sushy_tools.emulator.systems``
/ ``sushy_tools.emulator.vmedia`` namespaces; without them the original
properties run and sushy-tools behaves exactly as before. The
``indicators`` property (IndicatorLED) is replaced too: when the loaded
systems driver has an ``indicators_driver(fallback)`` factory, that builds
it (the KubeVirt driver keeps System LEDs on the VMs); otherwise the original
property runs. It also installs the request hooks of
:mod:`sushy_kubevirt.routes`.

The class is patched, never ``main.app``: under WSGI the config file runs
while ``main.py`` is still being imported. Importing starts no thread and
opens no connection (gunicorn forks after import).
"""

import functools
import importlib.metadata
import threading

from stevedore import driver as sd_driver
from stevedore import exception as sd_exception
from sushy_tools.emulator import main

from sushy_kubevirt import routes

SYSTEMS_KEY = 'SUSHY_EMULATOR_SYSTEMS_DRIVER'
VMEDIA_KEY = 'SUSHY_EMULATOR_VMEDIA_DRIVER'
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

# Serialises building the drivers (request threads race on first use).
_LOCK = threading.RLock()


class DriverNotFound(RuntimeError):
    """A configured driver name is not installed."""


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
        return sd_driver.DriverManager(
            namespace, name, on_load_failure_callback=_reraise).driver
    except sd_exception.NoMatches:
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
        return _original('configure')(self, *args, **kwargs)


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
        check(self, connect=True)
    except (DriverNotFound, ValueError) as exc:
        raise SystemExit('sushy-emulator: %s' % exc)
    return _original('run')(self, *args, **kwargs)


def _register_blueprint(self, *args, **kwargs):
    # main.py registers its blueprints right after ``app = Application()``
    # has loaded SUSHY_EMULATOR_CONFIG: the first point where a WSGI server
    # can be stopped from starting with a wrong setting. Nothing connects.
    check(self)
    return _original('register_blueprint')(self, *args, **kwargs)


def _original(name):
    return getattr(main.Application, _ORIGINALS)[name]


def install():
    """Patch ``main.Application`` once; later calls do nothing."""
    cls = main.Application
    if _ORIGINALS in vars(cls):
        return
    originals = {name: getattr(cls, name) for name in (
        'systems', 'vmedia', 'indicators', 'configure', 'run',
        'register_blueprint', 'preprocess_request', 'process_response')}
    setattr(cls, _ORIGINALS, originals)
    cls.systems = property(_systems)
    cls.vmedia = property(_vmedia)
    cls.indicators = property(_indicators)
    cls.configure = _configure
    cls.run = _run
    cls.register_blueprint = _register_blueprint
    routes.install(cls, originals, SYSTEMS_KEY)


install()
