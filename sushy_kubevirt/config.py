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

"""The ``SUSHY_EMULATOR_KUBEVIRT_*`` settings: defaults and type checks.

Every key is read from the emulator's Flask config (the file given with
``--config`` or ``SUSHY_EMULATOR_CONFIG``). Checks that need the cluster
(namespaces that exist and can be read) happen when the cluster cache starts.
"""

import dataclasses
import typing

PREFIX = 'SUSHY_EMULATOR_KUBEVIRT_'


class ConfigError(ValueError):
    """A setting has a wrong type or value; the message names the key."""


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Path of a kubeconfig file; None: in-cluster, else ``~/.kube/config``.
    kubeconfig: typing.Optional[str] = None
    #: kubeconfig context; None: the file's current context.
    context: typing.Optional[str] = None
    #: Namespaces to serve; None: every namespace (one cluster-wide watch).
    namespaces: typing.Optional[typing.Tuple[str, ...]] = None
    #: Label selector applied server-side to VirtualMachines; None: all.
    label_selector: typing.Optional[str] = None
    #: Sustained rate of live Kubernetes API calls (requests per second).
    qps: float = 20.0
    #: Live calls allowed in a burst above ``qps``.
    burst: int = 40


def _key(name):
    return PREFIX + name.upper()


def _optional_str(config, name):
    value = config.get(_key(name))
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError('%s must be a non-empty string, got %r'
                          % (_key(name), value))
    return value


def _namespaces(config):
    key = _key('namespaces')
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError('%s must be a list of namespace names, got %r'
                          % (key, value))
    if not value:
        raise ConfigError('%s must not be an empty list; leave it unset to '
                          'serve every namespace' % key)
    for item in value:
        if not isinstance(item, str) or not item:
            raise ConfigError('%s holds %r, which is not a namespace name'
                              % (key, item))
    if len(set(value)) != len(value):
        raise ConfigError('%s lists a namespace twice: %r' % (key, value))
    return tuple(value)


def _positive(config, name, kind, default):
    key = _key(name)
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        raise ConfigError('%s must be a positive %s, got %r'
                          % (key, 'integer' if kind is int else 'number',
                             value))
    return value


def load(config):
    """Build :class:`Settings` from a mapping such as Flask's ``app.config``.

    :raises ConfigError: naming the offending key.
    """
    defaults = Settings()
    return Settings(
        kubeconfig=_optional_str(config, 'kubeconfig'),
        context=_optional_str(config, 'context'),
        namespaces=_namespaces(config),
        label_selector=_optional_str(config, 'label_selector'),
        qps=float(_positive(config, 'qps', (int, float), defaults.qps)),
        burst=_positive(config, 'burst', int, defaults.burst),
    )
