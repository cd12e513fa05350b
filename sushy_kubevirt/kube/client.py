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

"""Build the official client's ``ApiClient`` from :class:`Settings`."""

import os

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import config_exception
import urllib3
import yaml

from sushy_kubevirt import config

#: Connections kept for request/response calls besides the open watches.
DEFAULT_WORKERS = 32


class NoCluster(config.ConfigError):
    """No Kubernetes API server to use: none configured, or none answers."""


def _load(settings, cfg):
    if settings.kubeconfig is None and not settings.context and \
            os.environ.get('KUBERNETES_SERVICE_HOST'):
        k8s_config.load_incluster_config(client_configuration=cfg)
        return
    k8s_config.load_kube_config(config_file=settings.kubeconfig,
                                context=settings.context,
                                client_configuration=cfg,
                                persist_config=False)


def _config_error(settings, exc):
    text = str(exc)
    if settings.context and settings.context in text:
        return config.ConfigError('%sCONTEXT: cannot load context %r: %s'
                                  % (config.PREFIX, settings.context, text))
    return NoCluster('%sKUBECONFIG: cannot load %r: %s' % (
        config.PREFIX, settings.kubeconfig or '~/.kube/config (or '
        'in-cluster)', text))


def make_api_client(settings, watches=0, workers=DEFAULT_WORKERS):
    """An ``ApiClient`` for the kubeconfig (and context) in ``settings``.

    Without a kubeconfig the in-cluster service account is used when
    running in a pod, else ``~/.kube/config``. The urllib3 pool holds a
    connection per open watch plus ``workers`` for the serving threads, and
    TCP keepalive is on so half-open connections are noticed. urllib3
    keeps its connection retries but does not retry an answer (its default
    resends a GET, PUT or DELETE answered 429 after any Retry-After,
    uncounted): :mod:`sushy_kubevirt.kube.api` and the reflector do that,
    bounded and counted.

    :raises sushy_kubevirt.config.ConfigError: naming the setting at fault
        (:class:`NoCluster` when no kubeconfig can be loaded).
    """
    cfg = k8s_client.Configuration()
    try:
        _load(settings, cfg)
    except (config_exception.ConfigException, OSError, ValueError,
            yaml.YAMLError) as exc:
        raise _config_error(settings, exc) from exc
    cfg.keep_alive = True
    cfg.retries = urllib3.Retry(3, respect_retry_after_header=False)
    cfg.connection_pool_maxsize = watches + workers
    return k8s_client.ApiClient(cfg)


def api_host(settings):
    """The Kubernetes API server URL of ``settings`` (no connection)."""
    api_client = make_api_client(settings)
    try:
        return api_client.configuration.host
    finally:
        api_client.close()
