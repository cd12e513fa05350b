"""Virtual-media driver for KubeVirt (placeholder: insert/eject answer 501).

sushy-tools builds it as ``KubeVirtVmediaDriver(config, logger, systems)``
through :mod:`sushy_kubevirt.plugin`. The device list and the per-device
state come from sushy-tools' ``BaseDriver``.
"""

from sushy_tools.emulator.resources import vmedia
from sushy_tools import error


class KubeVirtVmediaDriver(vmedia.BaseDriver):
    """Virtual media backed by CDI DataVolumes (not implemented yet)."""

    def __init__(self, config, logger, systems):
        super().__init__(config, logger)
        self._systems = systems

    @property
    def driver(self):
        return '<kubevirt-vmedia>'

    def insert_image(self, identity, device, image_url, inserted=True,
                     write_protected=True, username=None, password=None):
        raise error.NotSupportedError(
            'Virtual media insertion is not implemented yet for KubeVirt')

    def eject_image(self, identity, device):
        raise error.NotSupportedError(
            'Virtual media ejection is not implemented yet for KubeVirt')
