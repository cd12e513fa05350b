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

import logging

import pytest
from tests.functional.emulator import harness

from sushy_kubevirt import config

KEY = 'SUSHY_EMULATOR_KUBEVIRT_VMEDIA_'


def test_defaults():
    assert config.load({}).vmedia == config.Vmedia()


def test_values():
    settings = config.load({
        KEY + 'STORAGE_CLASS': 'fast', KEY + 'VOLUME_MODE': 'Block',
        KEY + 'SIZE_MARGIN': 0.25, KEY + 'CHECK_URL': False,
        KEY + 'ALLOWED_HOSTS': ['.example.com', '10.0.0.0/8'],
        KEY + 'DENIED_HOSTS': ['192.0.2.1']}).vmedia
    assert settings.storage_class == 'fast'
    assert settings.volume_mode == 'Block'
    assert settings.size_margin == 0.25 and settings.check_url is False


@pytest.mark.parametrize('name,value', [
    ('STORAGE_CLASS', ''), ('VOLUME_MODE', 'Raw'), ('SIZE_MARGIN', -1),
    ('SIZE_MARGIN', True), ('URL_TIMEOUT', 'x'), ('CHECK_URL', 'yes'),
    ('DEFAULT_SIZE', 10), ('URL_TIMEOUT', 0), ('MAX_REDIRECTS', -1),
    ('MAX_REDIRECTS', 1.5), ('ALLOWED_HOSTS', '10.0.0.0/8'),
    ('ALLOWED_HOSTS', ['10.0.0.0/33']), ('DENIED_HOSTS', ['a b']),
    ('DENIED_HOSTS', [''])])
def test_invalid_names_the_key(name, value):
    with pytest.raises(config.ConfigError) as exc:
        config.load({KEY + name: value})
    assert KEY + name in str(exc.value)


def test_unknown_key_names_the_closest(caplog):
    with caplog.at_level(logging.WARNING, logger=config.__name__):
        config.load({KEY + 'CHEK_URL': False, 'SUSHY_EMULATOR_OTHER': 1})
    assert KEY + 'CHEK_URL' in caplog.text
    assert 'did you mean %sCHECK_URL?' % KEY in caplog.text
    assert 'SUSHY_EMULATOR_OTHER' not in caplog.text


@pytest.mark.parametrize('mode', harness.MODES)
def test_a_wrong_vmedia_setting_stops_start_up(mode, tmp_path):
    """No cluster is needed: the settings are checked before any call."""
    config = harness.write_config(
        tmp_path / 'emulator.conf', str(tmp_path / 'no-kubeconfig'),
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_CHECK_URL='no',
        SUSHY_EMULATOR_KUBEVIRT_VMEDIA_URL_TIMOUT=3)
    process = harness.emulator_process(mode, config, tmp_path)
    assert process.start().wait_exit() != 0
    log = process.log()
    assert "%sCHECK_URL must be True or False, got 'no'" % KEY in log
    assert 'Unknown setting %sURL_TIMOUT ignored; did you mean ' \
        '%sURL_TIMEOUT?' % (KEY, KEY) in log
