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

"""Load the drivers a config names, from stevedore entry points.

``SUSHY_EMULATOR_SYSTEMS_DRIVER`` / ``SUSHY_EMULATOR_VMEDIA_DRIVER`` name
a driver of the ``sushy_tools.emulator.systems`` / ``.vmedia`` entry-point
namespaces. :mod:`sushy_kubevirt.plugin` makes ``Application.systems``,
``.vmedia``, ``.indicators`` and ``.chassis`` the properties here, which
build the named drivers once per configuration; without a name they are
sushy-tools' own members (kept in :func:`original`).
"""

import functools
import importlib.metadata
import threading

from stevedore import driver as stevedore_driver
from stevedore import exception as stevedore_exception
from sushy_tools.emulator import main

from sushy_kubevirt import config

SYSTEMS_NAMESPACE = 'sushy_tools.emulator.systems'
VMEDIA_NAMESPACE = 'sushy_tools.emulator.vmedia'
NAMESPACES = {config.SYSTEMS_DRIVER_KEY: SYSTEMS_NAMESPACE,
              config.VMEDIA_DRIVER_KEY: VMEDIA_NAMESPACE}
#: Systems driver method building the ``Application.indicators`` driver.
INDICATORS_FACTORY = 'indicators_driver'
#: Systems driver method building the ``Application.chassis`` driver.
CHASSIS_FACTORY = 'chassis_driver'
#: What :func:`drop_built` drops.
_BUILT = ('systems', 'vmedia', 'indicators', 'chassis')
#: Class attribute holding the original Application members we replaced.
ORIGINALS = '_sushy_kubevirt_originals'
#: Prefix of our entries in ``Application._cache``.
_CACHE_PREFIX = 'sushy_kubevirt.'

# Serialises building the drivers (request threads race on first use).
LOCK = threading.RLock()


class DriverNotFound(RuntimeError):
    """A configured driver name is not installed."""


def installed(namespace):
    """Names registered in an entry-point namespace (nothing is loaded)."""
    return sorted({entry.name for entry in
                   importlib.metadata.entry_points(group=namespace)})


def driver_class(app_config, key):
    """The class registered under ``app_config[key]``, or None if unset.

    :raises DriverNotFound: naming the key and the installed drivers.
    """
    name = app_config.get(key)
    if not name:
        return None
    return _load(key, name)


@functools.lru_cache(maxsize=None)
def _load(key, name):
    # Entry points do not change while the process runs; a stevedore
    # lookup costs about a millisecond, and routes read the drivers
    # many times per request.
    namespace = NAMESPACES[key]
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


def validate(app_config):
    """Check that every configured driver name resolves to a class."""
    for key in NAMESPACES:
        driver_class(app_config, key)


def originals():
    """The Application members :mod:`sushy_kubevirt.plugin` replaced."""
    return getattr(main.Application, ORIGINALS, {})


def original(name):
    return originals()[name]


def _built(app, name, make):
    """``make()`` once per configuration, kept in ``app._cache``.

    sushy-emulator loads its config twice (``SUSHY_EMULATOR_CONFIG`` when
    ``main`` is imported, then ``--config``): :func:`drop_built` drops
    what was built from the first. ``app._cache`` is what sushy-tools'
    memoize uses, so resetting it drops our drivers too.
    """
    cache = app.__dict__.setdefault('_cache', {})
    built = cache.get(_CACHE_PREFIX + name)
    if built is None:
        with LOCK:
            built = cache.get(_CACHE_PREFIX + name)
            if built is None:
                built = cache[_CACHE_PREFIX + name] = make()
    return built


def drop_built(app):
    """Forget the drivers built from the previous configuration."""
    cache = app.__dict__.get('_cache', {})
    for name in _BUILT:
        cache.pop(_CACHE_PREFIX + name, None)


def systems(app):
    """``Application.systems``: the named driver, else the stock one."""
    cls = driver_class(app.config, config.SYSTEMS_DRIVER_KEY)
    if cls is None:
        return original('systems').fget(app)

    def make():
        result = cls.initialize(app.config, app.logger)()
        app.logger.debug('Initialized system resource backed by %s '
                         'driver', result.driver)
        return result
    return _built(app, 'systems', make)


def vmedia(app):
    """``Application.vmedia``: the named driver, else the stock one."""
    cls = driver_class(app.config, config.VMEDIA_DRIVER_KEY)
    if cls is None:
        return original('vmedia').fget(app)
    return _built(app, 'vmedia',
                  lambda: cls(app.config, app.logger, app.systems))


def indicators(app):
    """``Application.indicators``: the systems driver's, if it has one."""
    cls = driver_class(app.config, config.SYSTEMS_DRIVER_KEY)
    stock = original('indicators').fget
    if cls is None or not hasattr(cls, INDICATORS_FACTORY):
        return stock(app)
    return _built(app, 'indicators', lambda: getattr(
        app.systems, INDICATORS_FACTORY)(lambda: stock(app)))


def chassis(app):
    """``Application.chassis``: the systems driver's, if it has one."""
    cls = driver_class(app.config, config.SYSTEMS_DRIVER_KEY)
    if cls is None or not hasattr(cls, CHASSIS_FACTORY):
        return original('chassis').fget(app)
    return _built(app, 'chassis',
                  lambda: getattr(app.systems, CHASSIS_FACTORY)())
