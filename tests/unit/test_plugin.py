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

"""The stevedore loader patched into sushy-tools' Application class."""

import os
from unittest import mock

import flask
import pytest
from sushy_tools.emulator import main
from sushy_tools.emulator.resources import indicators as stock_indicators
from sushy_tools.emulator.resources.systems import fakedriver
from sushy_tools.emulator.resources import vmedia as stock_vmedia

from sushy_kubevirt import config
from sushy_kubevirt.drivers import clusters
from sushy_kubevirt.drivers import indicators as kv_indicators
from sushy_kubevirt.drivers import systems as kv_systems
from sushy_kubevirt.drivers import vmedia as kv_vmedia
from sushy_kubevirt import loader
from sushy_kubevirt import plugin


@pytest.fixture
def app(tmp_path):
    saved = dict(main.app.config)
    main.app._cache = {}
    main.app.config['SUSHY_EMULATOR_STATE_DIR'] = str(tmp_path)
    yield main.app
    main.app.config.clear()
    main.app.config.update(saved)
    main.app._cache = {}


def test_install_is_idempotent_and_patches_the_class():
    systems = vars(main.Application)['systems']
    plugin.install()
    assert vars(main.Application)['systems'] is systems
    assert 'systems' not in vars(main.app)
    assert loader.original('systems') is not systems


def test_without_keys_stock_selection_is_unchanged(app):
    app.config['SUSHY_EMULATOR_FAKE_DRIVER'] = True
    assert isinstance(app.systems, fakedriver.FakeDriver)
    assert isinstance(app.vmedia, stock_vmedia.StaticDriver)
    response = app.test_client().get('/redfish/v1/Systems')
    assert response.status_code == 200
    members = response.get_json()['Members']
    assert len(members) == len(app.config['SUSHY_EMULATOR_FAKE_SYSTEMS'])


def test_named_drivers_are_loaded_from_entry_points(app, tmp_path):
    app.config[config.SYSTEMS_DRIVER_KEY] = 'kubevirt'
    app.config[config.VMEDIA_DRIVER_KEY] = 'kubevirt'
    app.config['SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG'] = str(
        tmp_path / 'absent')
    systems = app.systems
    assert isinstance(systems, kv_systems.KubeVirtDriver)
    assert app.systems is systems
    assert isinstance(app.vmedia, kv_vmedia.KubeVirtVmediaDriver)
    assert app.vmedia._systems is systems


def test_unknown_name_lists_installed_drivers():
    with pytest.raises(loader.DriverNotFound) as exc:
        loader.driver_class({config.VMEDIA_DRIVER_KEY: 'nope'},
                            config.VMEDIA_DRIVER_KEY)
    message = str(exc.value)
    assert config.VMEDIA_DRIVER_KEY in message and "'nope'" in message
    assert 'installed in entry-point namespace %s: kubevirt' % (
        loader.VMEDIA_NAMESPACE) in message


def test_run_stops_on_unknown_driver(app):
    app.config[config.SYSTEMS_DRIVER_KEY] = 'nope'
    with mock.patch.object(flask.Flask, 'run') as run:
        with pytest.raises(SystemExit) as exc:
            app.run()
    assert 'installed in entry-point namespace' in str(exc.value.code)
    run.assert_not_called()


def test_run_stops_on_bad_setting(app):
    app.config[config.SYSTEMS_DRIVER_KEY] = 'kubevirt'
    app.config['SUSHY_EMULATOR_KUBEVIRT_QPS'] = 'fast'
    with mock.patch.object(flask.Flask, 'run') as run:
        with pytest.raises(SystemExit) as exc:
            app.run()
    assert 'SUSHY_EMULATOR_KUBEVIRT_QPS' in str(exc.value.code)
    run.assert_not_called()


def test_wsgi_import_path_stops_on_unknown_driver(app):
    # main.py registers blueprints right after loading the config file.
    app.config[config.SYSTEMS_DRIVER_KEY] = 'nope'
    with pytest.raises(loader.DriverNotFound):
        app.register_blueprint(flask.Blueprint('x', __name__))


def test_a_config_change_rebuilds_the_drivers(app, tmp_path):
    app.config[config.SYSTEMS_DRIVER_KEY] = 'kubevirt'
    app.config[config.VMEDIA_DRIVER_KEY] = 'kubevirt'
    app.config['SUSHY_EMULATOR_KUBEVIRT_NAMESPACES'] = ['first']
    first, vmedia = app.systems, app.vmedia
    assert first._settings.namespaces == ('first',)
    # sushy-emulator --config loads a second file after the import one.
    app.configure(extra_config={
        'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES': ['second']})
    second = app.systems
    assert second is not first
    assert second._settings.namespaces == ('second',)
    assert app.systems is second
    assert app.vmedia is not vmedia and app.vmedia._systems is second


def test_changed_settings_stop_the_old_cluster(monkeypatch):
    made = []

    class Recording:
        def __init__(self, settings, datavolumes=False, indexers=None,
                     events=None, configmaps=None, claims=False):
            self.settings, self.stopped = settings, False
            made.append(self)

        def add_vmi_handler(self, fn):
            pass

        def stop(self):
            self.stopped = True

    monkeypatch.setattr(clusters.cluster, 'Cluster', Recording)
    monkeypatch.setattr(clusters, '_clusters', {})
    log = mock.Mock()
    first = clusters.shared(
        config.Settings(namespaces=('a',)), False, log)
    assert clusters.shared(
        config.Settings(namespaces=('a',)), False, log) is first
    second = clusters.shared(
        config.Settings(namespaces=('b',)), False, log)
    assert made == [first, second]
    assert first.stopped and not second.stopped


def test_indicators_come_from_the_systems_driver(app):
    app.config[config.SYSTEMS_DRIVER_KEY] = 'kubevirt'
    leds = app.indicators
    assert isinstance(leds, kv_indicators.KubeVirtIndicators)
    assert app.indicators is leds and leds._systems is app.systems
    # The stock store (a SQLite file) is built only for another identity.
    stock = leds._fallback()
    assert isinstance(stock, stock_indicators.StaticDriver)
    assert leds._fallback() is stock
    app.configure(extra_config={'SUSHY_EMULATOR_KUBEVIRT_QPS': 7})
    assert app.indicators is not leds
    assert app.indicators._systems is app.systems


def test_other_drivers_keep_the_stock_indicators(app, monkeypatch):
    assert isinstance(app.indicators, stock_indicators.StaticDriver)
    # A systems driver without the indicators_driver factory.
    monkeypatch.setattr(loader, 'driver_class', lambda app_config, key: (
        fakedriver.FakeDriver if key == config.SYSTEMS_DRIVER_KEY else None))
    app.config[config.SYSTEMS_DRIVER_KEY] = 'fake'
    assert isinstance(app.systems, fakedriver.FakeDriver)
    assert isinstance(app.indicators, stock_indicators.StaticDriver)


def test_every_extension_point_is_documented():
    with open(os.path.join(os.path.dirname(__file__), '..', '..', 'doc',
                           'source', 'usage.rst')) as doc:
        text = doc.read()
    missing = [point.name for point in plugin.EXTENSION_POINTS
               if '``%s``' % point.name not in text]
    assert not missing, 'doc/source/usage.rst lacks %s' % missing


def test_a_lacking_sushy_tools_is_named_with_its_version(app, monkeypatch):
    monkeypatch.delitem(app.view_functions, 'processor')
    with pytest.raises(plugin.IncompatibleSushyTools) as exc:
        plugin.check_extension_points(app)
    assert 'it lacks processor (GET /redfish/v1/Systems/<identity>/' \
        'Processors/<processor_id>)' in str(exc.value)
    assert 'sushy-tools %s' % plugin._sushy_tools_version() in str(exc.value)


def test_one_handler_per_endpoint_and_method():
    """Two points must not claim one hook: the second would replace it."""
    afters = [p.name for p in plugin.EXTENSION_POINTS
              if p.after and p.name != plugin.EVERY]
    befores = [(p.name, m) for p in plugin.EXTENSION_POINTS
               if p.before and p.name != plugin.EVERY for m in p.methods]
    assert len(afters) == len(set(afters))
    assert len(befores) == len(set(befores))
