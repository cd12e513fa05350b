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

"""SUSHY_EMULATOR_KUBEVIRT_VMEDIA_* settings (no cluster needed)."""

import pytest

from sushy_kubevirt import config
from sushy_kubevirt.drivers import vmedia

KEY = 'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_'


def test_defaults():
    assert vmedia.load_settings({}) == vmedia.Settings()


def test_values():
    settings = vmedia.load_settings({
        KEY + 'STORAGE_CLASS': 'fast', KEY + 'VOLUME_MODE': 'Block',
        KEY + 'SIZE_MARGIN': 0.25, KEY + 'CHECK_URL': False})
    assert settings.storage_class == 'fast'
    assert settings.volume_mode == 'Block'
    assert settings.size_margin == 0.25 and settings.check_url is False


@pytest.mark.parametrize('name,value', [
    ('STORAGE_CLASS', ''), ('VOLUME_MODE', 'Raw'), ('SIZE_MARGIN', -1),
    ('SIZE_MARGIN', True), ('URL_TIMEOUT', 'x'), ('CHECK_URL', 'yes'),
    ('DEFAULT_SIZE', 10)])
def test_invalid_names_the_key(name, value):
    with pytest.raises(config.ConfigError) as exc:
        vmedia.load_settings({KEY + name: value})
    assert KEY + name in str(exc.value)
