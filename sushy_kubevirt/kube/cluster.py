"""The one object the drivers use to read and write the cluster.

Reads come from watch caches (live, and counted, until the cache of that
namespace has synced); writes are live, rate-limited and counted, and their
results are overlaid on the cache so the next read sees them.
"""

import logging
import threading

from sushy_kubevirt import config
from sushy_kubevirt.kube import accounting as accounting_mod
from sushy_kubevirt.kube import api as api_mod
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import errors
from sushy_kubevirt.kube import limiter
from sushy_kubevirt.kube import resources as res

LOG = logging.getLogger(__name__)


def firmware_uuid(vm):
    """``spec.template.spec.domain.firmware.uuid`` of a VM, or None."""
    spec = (vm.get('spec') or {}).get('template') or {}
    domain = (spec.get('spec') or {}).get('domain') or {}
    return (domain.get('firmware') or {}).get('uuid')


class Cluster:
    """Cached reads and guarded live writes for VMs, VMIs and DataVolumes.

    Construction makes no connection and starts no thread; the first call
    does. Reads return plain dicts that callers must treat as read-only;
    a missing object reads as None.
    """

    def __init__(self, settings, datavolumes=False, api_client=None):
        self.settings = settings
        self.datavolumes = datavolumes
        self.accounting = accounting_mod.Accounting()
        self._api_client = api_client
        self._api = None
        self._lock = threading.Lock()
        self._vmi_handlers = []

    # lifecycle

    def _live(self):
        with self._lock:
            if self._api is None:
                api_client = self._api_client or client.make_api_client(
                    self.settings)
                self._api = api_mod.Api(
                    api_client,
                    limiter.TokenBucket(self.settings.qps,
                                        self.settings.burst),
                    self.accounting)
            return self._api

    def validate(self):
        """Check the configured namespaces exist and their VMs are readable.

        :raises sushy_kubevirt.config.ConfigError: naming the setting.
        """
        api = self._live()
        key = config.PREFIX + 'NAMESPACES'
        for namespace in self.settings.namespaces or (None,):
            if namespace is not None:
                try:
                    api.get(res.NAMESPACE, None, namespace)
                except errors.NotFound:
                    raise config.ConfigError(
                        '%s: namespace %r does not exist'
                        % (key, namespace)) from None
                except errors.Forbidden:
                    LOG.debug('Cannot read namespace %s; checking its VMs '
                              'only', namespace)
                except errors.ApiError as exc:
                    raise config.ConfigError(
                        '%s: cannot check namespace %r: %s'
                        % (key, namespace, exc)) from exc
            try:
                api.list(res.VM, namespace, self.settings.label_selector,
                         limit=1)
            except errors.ApiError as exc:
                raise config.ConfigError(
                    '%s: cannot list virtualmachines in %s: %s'
                    % (key, 'namespace %r' % namespace if namespace
                       else 'all namespaces', exc)) from exc

    def stop(self):
        """End every thread and close every connection."""
        with self._lock:
            if self._api is not None:
                self._api.close()
                self._api = None

    def add_vmi_handler(self, fn):
        """Call ``fn(event_type, vmi)`` on VMI changes (dispatcher thread)."""
        self._vmi_handlers.append(fn)

    # reads

    def _served(self, namespace):
        return (self.settings.namespaces is None
                or namespace in self.settings.namespaces)

    def _get(self, resource, namespace, name):
        if not self._served(namespace):
            return None
        try:
            return self._live().get(resource, namespace, name)
        except errors.NotFound:
            return None

    def list_vms(self):
        """Every served VM."""
        result = []
        for namespace in self.settings.namespaces or (None,):
            result += self._live().list(
                res.VM, namespace, self.settings.label_selector)['items']
        return result

    def get_vm(self, namespace, name):
        return self._get(res.VM, namespace, name)

    def find_vms_by_uuid(self, uuid):
        """VMs whose firmware UUID is ``uuid`` (normally zero or one)."""
        return [vm for vm in self.list_vms() if firmware_uuid(vm) == uuid]

    def find_vms_by_name(self, name):
        """Served VMs named ``name``, in any served namespace."""
        return [vm for vm in self.list_vms()
                if vm['metadata']['name'] == name]

    def get_vmi(self, namespace, name):
        """The VMI of served VM ``namespace/name``, or None."""
        if self.settings.label_selector and \
                self.get_vm(namespace, name) is None:
            return None
        return self._get(res.VMI, namespace, name)

    def get_datavolume(self, namespace, name):
        return self._get(res.DATAVOLUME, namespace, name)

    # live calls

    def get_vm_live(self, namespace, name):
        """GET the VM from the API server. :raises errors.NotFound:"""
        return self._live().get(res.VM, namespace, name)

    def patch_vm(self, namespace, name, ops):
        """Apply JSON-patch ``ops``; return the patched VM."""
        return self._live().patch(res.VM, namespace, name, ops)

    def vm_subresource(self, namespace, name, action, body=None):
        """PUT ``subresources.kubevirt.io/v1 .../{name}/{action}``."""
        return self._live().put_subresource(res.VM_ACTIONS, namespace, name,
                                            action, body)

    def vmi_subresource(self, namespace, name, action, body=None):
        return self._live().put_subresource(res.VMI_ACTIONS, namespace,
                                            name, action, body)

    def create_datavolume(self, namespace, body):
        return self._live().create(res.DATAVOLUME, namespace, body)

    def delete_datavolume(self, namespace, name):
        return self._live().delete(res.DATAVOLUME, namespace, name)

    def create_secret(self, namespace, body):
        return self._live().create(res.SECRET, namespace, body)

    def delete_secret(self, namespace, name):
        return self._live().delete(res.SECRET, namespace, name)
