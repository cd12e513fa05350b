"""placeholder"""
from sushy_tools.emulator.resources.systems import base
from sushy_kubevirt import config


class KubeVirtDriver(base.AbstractSystemsDriver):
    @classmethod
    def initialize(cls, cfg, logger, *args, **kwargs):
        super().initialize(cfg, logger)
        cls._settings = config.load(cfg)
        return cls

    driver = '<kubevirt>'
    systems = []

    def uuid(self, identity):
        pass

    def name(self, identity):
        pass

    def get_power_state(self, identity):
        pass

    def set_power_state(self, identity, state):
        pass

    def get_boot_device(self, identity):
        pass

    def set_boot_device(self, identity, boot_source):
        pass
