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
``--config`` or ``SUSHY_EMULATOR_CONFIG``) by :func:`load`, which checks
all of them at once: the systems driver calls it when it is built, at
start-up on every launch path, so a wrong value stops the emulator with a
message naming the key. A key with our prefix that is not a setting is
logged as a warning naming the closest valid key. Checks that need the
cluster (namespaces that exist and can be read) happen when the cluster
cache starts.
"""

import dataclasses
import difflib
import functools
import hashlib
import ipaddress
import logging
import re
import typing

PREFIX = 'SUSHY_EMULATOR_KUBEVIRT_'
VMEDIA_PREFIX = PREFIX + 'VMEDIA_'
EVENTS_PREFIX = PREFIX + 'EVENTS_'
#: sushy-tools' keys naming the drivers (entry points) to load.
SYSTEMS_DRIVER_KEY = 'SUSHY_EMULATOR_SYSTEMS_DRIVER'
VMEDIA_DRIVER_KEY = 'SUSHY_EMULATOR_VMEDIA_DRIVER'
#: sushy-tools' htpasswd file (HTTP Basic users).
AUTH_FILE_KEY = 'SUSHY_EMULATOR_AUTH_FILE'

LOG = logging.getLogger(__name__)
#: Unknown keys already warned about (each is logged once per process).
_WARNED = set()
_HOST_NAME = re.compile(
    r'^\.?[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9])?'
    r'(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9])?)*$')


#: The values of ``SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE``.
FILE, KUBERNETES, SECRETS = 'file', 'kubernetes', 'secrets'
ACCOUNTS_SOURCES = (FILE, KUBERNETES, SECRETS)


@dataclasses.dataclass(frozen=True)
class Shard:
    """One of ``count`` replicas that split the namespaces between them.

    A namespace belongs to the shard with the highest SHA-256 of
    ``<shard>/<namespace>`` (rendezvous hashing): every process agrees
    without coordination, and going from N to N+1 shards moves only the
    namespaces the new shard wins.
    """

    #: This replica's shard, from 0.
    index: int
    #: How many shards there are.
    count: int

    def owns(self, namespace):
        return owner(namespace, self.count) == self.index

    def __str__(self):
        return '%d/%d' % (self.index, self.count)


@functools.lru_cache(maxsize=65536)
def owner(namespace, count):
    """The shard (0 to ``count - 1``) that serves ``namespace``."""
    return max(range(count), key=lambda shard: hashlib.sha256(
        ('%d/%s' % (shard, namespace)).encode()).digest())


class ConfigError(ValueError):
    """A setting has a wrong type or value; the message names the key."""


@dataclasses.dataclass(frozen=True)
class Vmedia:
    """``SUSHY_EMULATOR_KUBEVIRT_VMEDIA_*``: the virtual-media driver."""

    #: StorageClass of the DataVolumes; None: the cluster default.
    storage_class: typing.Optional[str] = None
    #: ``Filesystem`` or ``Block``; None: from the StorageProfile.
    volume_mode: typing.Optional[str] = None
    #: Fraction added to the image size (CDI filesystem overhead).
    size_margin: float = 0.1
    #: Storage request when the image size is unknown.
    default_size: str = '10Gi'
    #: ConfigMap with the CA bundle for https images (CDI certConfigMap).
    cert_configmap: typing.Optional[str] = None
    #: Resolve the image host and ask the image's size (HEAD) before
    #: creating anything.
    check_url: bool = True
    #: Seconds allowed for that whole check, redirects included.
    url_timeout: float = 5.0
    #: Seconds an InsertMedia request waits for that check; past it, the
    #: check goes on in the background, only the host policy on the name
    #: applies and the default size is requested (a slow image server
    #: cannot hold a worker thread longer).
    url_wait: float = 0.5
    #: Redirects the check follows, each checked against the host policy.
    max_redirects: int = 3
    #: Hosts (names, addresses or CIDRs) an image may come from; None: any
    #: host not denied.
    allowed_hosts: typing.Optional[typing.Tuple[str, ...]] = None
    #: Hosts denied on top of the built-in denials (link-local and
    #: metadata addresses, the API server's own address and port).
    denied_hosts: typing.Tuple[str, ...] = ()
    #: Seconds a tray DataVolume its VM does not use is left before it is
    #: deleted (an InsertMedia cut between its two writes); 0: never.
    orphan_grace: float = 10.0
    #: Seconds between two lists of the tray Secrets no DataVolume uses.
    orphan_sweep: float = 300.0


@dataclasses.dataclass(frozen=True)
class Events:
    """``SUSHY_EMULATOR_KUBEVIRT_EVENTS_*``: the Redfish EventService."""

    #: Namespace of the subscription Secrets and of the sender Lease;
    #: None: no EventService.
    namespace: typing.Optional[str] = None
    #: Retries of a failed delivery (DeliveryRetryAttempts).
    retry_attempts: int = 3
    #: Seconds between two attempts (DeliveryRetryIntervalSeconds, an
    #: integer in Redfish).
    retry_interval: int = 5
    #: Seconds one POST to a subscriber may take.
    timeout: float = 5.0
    #: Events waiting per subscriber; more are dropped and counted.
    queue_size: int = 1000
    #: Recent events each process keeps for a new sender to resume from.
    buffer_size: int = 10000
    #: Subscriptions that may exist; a create past them is refused.
    max_subscriptions: int = 100
    #: Threads of a process that POST events (to every subscription).
    workers: int = 8
    #: Server-Sent Event streams one process serves at once (fewer than
    #: its threads), of one account, and seconds one may read nothing.
    sse_streams: int = 16
    sse_streams_per_account: int = 4
    sse_send_timeout: float = 30.0
    #: Lease duration: a sender silent this long is replaced.
    lease_duration: float = 15.0
    #: Seconds between two renewals (and checkpoints) of the Lease; less
    #: than half the duration.
    renew_period: float = 2.0
    #: Hosts (names, addresses or CIDRs) a Destination may name; None:
    #: any host not denied.
    allowed_hosts: typing.Optional[typing.Tuple[str, ...]] = None
    #: Hosts denied on top of the built-in denials.
    denied_hosts: typing.Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Path of a kubeconfig file; None: in-cluster, else ``~/.kube/config``.
    kubeconfig: typing.Optional[str] = None
    #: kubeconfig context; None: the file's current context.
    context: typing.Optional[str] = None
    #: Namespaces to serve (those :attr:`shard` owns); None: every
    #: namespace (one cluster-wide watch).
    namespaces: typing.Optional[typing.Tuple[str, ...]] = None
    #: Label selector applied server-side to VirtualMachines; None: all.
    label_selector: typing.Optional[str] = None
    #: This replica's :class:`Shard`: of :attr:`namespaces`, or of every
    #: namespace, only those it owns are served; None: no sharding.
    shard: typing.Optional[Shard] = None
    #: Sustained rate of live Kubernetes API calls (requests per second).
    qps: float = 20.0
    #: Live calls allowed in a burst above ``qps``.
    burst: int = 40
    #: Where accounts come from: ``file`` (the htpasswd file, with
    #: :attr:`accounts_file`), ``kubernetes`` (bearer tokens, the
    #: cluster's RBAC) or ``secrets`` (one Secret per account;
    #: :mod:`sushy_kubevirt.accounts.sources`).
    accounts_source: str = FILE
    #: Namespace of the account Secrets (``secrets`` source only; the
    #: sessions' namespace unless set).
    accounts_namespace: typing.Optional[str] = None
    #: YAML file giving each user a role and namespaces
    #: (:mod:`sushy_kubevirt.accounts.accountsfile`); None: every
    #: authenticated user is an Administrator of everything served.
    accounts_file: typing.Optional[str] = None
    #: Seconds a TokenReview or SubjectAccessReview answer is reused.
    access_cache_ttl: float = 10.0
    #: Seconds a starting process (each gunicorn worker) waits for its
    #: watch cache's first lists before it serves; 0: serve at once.
    boot_sync_wait: float = 30.0
    #: The virtual-media settings.
    vmedia: Vmedia = Vmedia()
    #: The EventService settings.
    events: Events = Events()


def _key(name, prefix=PREFIX):
    return prefix + name.upper()


#: Keys read beside :func:`load`: the sessions' and authentication's
#: (``accounts.sessionstore``, ``accounts.lockout``, ``accounts.throttle``,
#: ``accounts.clients``).
SESSION_TIMEOUT_KEY = _key('session_timeout')
SESSION_NAMESPACE_KEY = _key('session_namespace')
SESSION_LIMIT_KEY = _key('session_limit')
LOCKOUT_THRESHOLD_KEY = _key('account_lockout_threshold')
LOCKOUT_DURATION_KEY = _key('account_lockout_duration')
LOCKOUT_RESET_KEY = _key('account_lockout_counter_reset_after')
LOCKOUT_ALL_CLIENTS_KEY = _key('account_lockout_all_clients_threshold')
ACCOUNTS_SOURCE_KEY = _key('accounts_source')
ACCOUNTS_NAMESPACE_KEY = _key('accounts_namespace')
AUTH_FAILURE_RATE_KEY = _key('auth_failure_rate')
AUTH_FAILURE_BURST_KEY = _key('auth_failure_burst')
TRUSTED_PROXIES_KEY = _key('trusted_proxies')
AUTH_KEYS = (SESSION_TIMEOUT_KEY, SESSION_NAMESPACE_KEY, SESSION_LIMIT_KEY,
             LOCKOUT_THRESHOLD_KEY, LOCKOUT_DURATION_KEY, LOCKOUT_RESET_KEY,
             LOCKOUT_ALL_CLIENTS_KEY, AUTH_FAILURE_RATE_KEY,
             AUTH_FAILURE_BURST_KEY, TRUSTED_PROXIES_KEY)


def known_keys():
    """Every ``SUSHY_EMULATOR_KUBEVIRT_*`` key the emulator reads."""
    keys = {_key(f.name) for f in dataclasses.fields(Settings)
            if f.name not in ('vmedia', 'events')}
    keys |= set(AUTH_KEYS)
    return keys | {_key(f.name, VMEDIA_PREFIX)
                   for f in dataclasses.fields(Vmedia)} | {
        _key(f.name, EVENTS_PREFIX) for f in dataclasses.fields(Events)}


def _optional_str(config, key):
    value = config.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError('%s must be a non-empty string, got %r'
                          % (key, value))
    return value


def _names(config, key, what):
    """A tuple of distinct non-empty strings, or None when unset."""
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError('%s must be a list of %s, got %r'
                          % (key, what, value))
    for item in value:
        if not isinstance(item, str) or not item:
            raise ConfigError('%s holds %r, which is not a %s'
                              % (key, item, what[:-1]))
    if len(set(value)) != len(value):
        raise ConfigError('%s lists a value twice: %r' % (key, value))
    return tuple(value)


def _namespaces(config):
    key = _key('namespaces')
    value = _names(config, key, 'namespace names')
    if value == ():
        raise ConfigError('%s must not be an empty list; leave it unset to '
                          'serve every namespace' % key)
    return value


def _shard(config):
    """``"<index>/<count>"`` as a :class:`Shard`, or None when unset."""
    key = _key('shard')
    value = config.get(key)
    if value is None:
        return None
    index, slash, count = str(value).partition('/')
    if not (isinstance(value, str) and slash and index.isdigit()
            and count.isdigit() and int(index) < int(count)):
        raise ConfigError('%s must be "<index>/<count>" with 0 <= index < '
                          'count, e.g. "0/3", got %r' % (key, value))
    return Shard(int(index), int(count))


def _hosts(config, key):
    """Host names, ``.domain`` suffixes, addresses or CIDRs, or None."""
    value = _names(config, key, 'host names or CIDRs')
    for item in value or ():
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            if '/' in item or not _HOST_NAME.match(item):
                raise ConfigError('%s holds %r, which is neither a host '
                                  'name nor an address or CIDR'
                                  % (key, item)) from None
    return value


def _number(config, key, kind, default, minimum=0, strict=True):
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, kind) or \
            value < minimum or (strict and value == minimum):
        raise ConfigError('%s must be a%s %s %s %s, got %r'
                          % (key, 'n' if kind is int else '',
                             'integer' if kind is int else 'number',
                             '>' if strict else '>=', minimum, value))
    return value


def _bool(config, key, default):
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError('%s must be True or False, got %r' % (key, value))
    return value


#: sushy-tools' VerifyCertificate of a virtual media device with no own.
VMEDIA_VERIFY_KEY = 'SUSHY_EMULATOR_VMEDIA_VERIFY_SSL'


def vmedia_verify(config):
    """VerifyCertificate of a tray with no own setting.

    ``SUSHY_EMULATOR_VMEDIA_VERIFY_SSL`` when set; True when unset (unlike
    sushy-tools, whose default is False: CDI always verified before).
    """
    return _bool(config, VMEDIA_VERIFY_KEY, True)


def _vmedia(config):
    defaults = Vmedia()

    def key(name):
        return _key(name, VMEDIA_PREFIX)

    mode = config.get(key('volume_mode'))
    if mode not in (None, 'Filesystem', 'Block'):
        raise ConfigError('%s must be Filesystem or Block, got %r'
                          % (key('volume_mode'), mode))
    default_size = config.get(key('default_size'), defaults.default_size)
    if not isinstance(default_size, str) or not default_size:
        raise ConfigError('%s must be a non-empty string, got %r'
                          % (key('default_size'), default_size))
    return Vmedia(
        storage_class=_optional_str(config, key('storage_class')),
        volume_mode=mode,
        size_margin=float(_number(config, key('size_margin'), (int, float),
                                  defaults.size_margin, strict=False)),
        default_size=default_size,
        cert_configmap=_optional_str(config, key('cert_configmap')),
        check_url=_bool(config, key('check_url'), defaults.check_url),
        url_timeout=float(_number(config, key('url_timeout'), (int, float),
                                  defaults.url_timeout)),
        url_wait=float(_number(config, key('url_wait'), (int, float),
                               defaults.url_wait, strict=False)),
        max_redirects=_number(config, key('max_redirects'), int,
                              defaults.max_redirects, strict=False),
        allowed_hosts=_hosts(config, key('allowed_hosts')),
        denied_hosts=_hosts(config, key('denied_hosts')) or (),
        orphan_grace=float(_number(config, key('orphan_grace'), (int, float),
                                   defaults.orphan_grace, strict=False)),
        orphan_sweep=float(_number(config, key('orphan_sweep'), (int, float),
                                   defaults.orphan_sweep)),
    )


def _events(config):
    defaults = Events()

    def key(name):
        return _key(name, EVENTS_PREFIX)

    def number(name, kind=(int, float), strict=True):
        value = _number(config, key(name), kind, getattr(defaults, name),
                        strict=strict)
        return value if kind is int else float(value)

    result = Events(
        namespace=_optional_str(config, key('namespace')),
        retry_attempts=number('retry_attempts', int, strict=False),
        retry_interval=number('retry_interval', int, strict=False),
        timeout=number('timeout'),
        queue_size=number('queue_size', int),
        buffer_size=number('buffer_size', int),
        max_subscriptions=number('max_subscriptions', int),
        workers=number('workers', int),
        sse_streams=number('sse_streams', int),
        sse_streams_per_account=number('sse_streams_per_account', int),
        sse_send_timeout=number('sse_send_timeout'),
        lease_duration=number('lease_duration'),
        renew_period=number('renew_period'),
        allowed_hosts=_hosts(config, key('allowed_hosts')),
        denied_hosts=_hosts(config, key('denied_hosts')) or (),
    )
    if result.renew_period * 2 > result.lease_duration:
        raise ConfigError('%s (%s) must be at most half of %s (%s)'
                          % (key('renew_period'), result.renew_period,
                             key('lease_duration'), result.lease_duration))
    return result


def warn_unknown(config):
    """Log each unknown key with our prefix and the closest valid key."""
    known = known_keys()
    for key in sorted(k for k in config if isinstance(k, str)
                      and k.startswith(PREFIX) and k not in known
                      and k not in _WARNED):
        _WARNED.add(key)
        close = difflib.get_close_matches(key, known, n=1)
        LOG.warning('Unknown setting %s ignored%s', key,
                    '; did you mean %s?' % close[0] if close else '')


def load(config):
    """Build :class:`Settings` from a mapping such as Flask's ``app.config``.

    :raises ConfigError: naming the offending key.
    """
    warn_unknown(config)
    defaults = Settings()
    source = config.get(ACCOUNTS_SOURCE_KEY, defaults.accounts_source)
    if source not in ACCOUNTS_SOURCES:
        raise ConfigError('%s must be one of %s, got %r' % (
            ACCOUNTS_SOURCE_KEY, ', '.join(ACCOUNTS_SOURCES), source))
    accounts_file = _optional_str(config, _key('accounts_file'))
    if accounts_file and source != FILE:
        raise ConfigError('%s is for the file source; with %s = %r %s' % (
            _key('accounts_file'), ACCOUNTS_SOURCE_KEY, source,
            "the cluster's RBAC decides" if source == KUBERNETES
            else 'the accounts are Secrets'))
    namespaces = _namespaces(config)
    shard = _shard(config)
    if shard and namespaces and not any(map(shard.owns, namespaces)):
        raise ConfigError('Shard %s of %s owns none of the namespaces of %s'
                          % (shard, _key('shard'), _key('namespaces')))
    accounts_namespace = _optional_str(config, ACCOUNTS_NAMESPACE_KEY)
    if source == SECRETS:
        if config.get(AUTH_FILE_KEY):
            raise ConfigError('%s is not read with %s = %r: the accounts '
                              'are Secrets' % (AUTH_FILE_KEY,
                                               ACCOUNTS_SOURCE_KEY, SECRETS))
        accounts_namespace = accounts_namespace or _optional_str(
            config, SESSION_NAMESPACE_KEY) or (
            namespaces[0] if namespaces else 'default')
    elif accounts_namespace:
        raise ConfigError('%s is for %s = %r' % (
            ACCOUNTS_NAMESPACE_KEY, ACCOUNTS_SOURCE_KEY, SECRETS))
    return Settings(
        kubeconfig=_optional_str(config, _key('kubeconfig')),
        context=_optional_str(config, _key('context')),
        namespaces=namespaces,
        label_selector=_optional_str(config, _key('label_selector')),
        shard=shard,
        qps=float(_number(config, _key('qps'), (int, float),
                          defaults.qps)),
        burst=_number(config, _key('burst'), int, defaults.burst),
        accounts_source=source,
        accounts_file=accounts_file,
        accounts_namespace=accounts_namespace,
        access_cache_ttl=float(_number(
            config, _key('access_cache_ttl'), (int, float),
            defaults.access_cache_ttl, strict=False)),
        boot_sync_wait=float(_number(
            config, _key('boot_sync_wait'), (int, float),
            defaults.boot_sync_wait, strict=False)),
        vmedia=_vmedia(config),
        events=_events(config),
    )
