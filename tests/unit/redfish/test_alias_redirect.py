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


"""The 307 of an alias: the same route under the canonical id, or 404."""

import flask
import pytest

from sushy_kubevirt.redfish import base

UUID = '5b0d2f3a-0000-4000-8000-000000000001'


@pytest.fixture
def app():
    app = flask.Flask(__name__)
    app.add_url_rule('/Systems/<identity>/Processors/<processor_id>',
                     'processor', lambda **kwargs: '')
    return app


@pytest.mark.parametrize('target', [UUID, 'lab.node-0'])
def test_the_route_and_its_other_arguments_are_kept(app, target):
    with app.test_request_context('/Systems/node-0/Processors/CPU0'):
        answer = base.alias_redirect(target)
    assert answer.status_code == 307
    assert answer.headers['Location'] == \
        '/Systems/%s/Processors/CPU0' % target


@pytest.mark.parametrize('target', [
    '..', '.', '../Systems/' + UUID, 'a/b', 'a\r\nb', 'x\u202eevil', '',
    None, '%2e%2e'])
def test_a_target_that_is_no_path_segment_is_a_404(app, target):
    with app.test_request_context('/Systems/node-0/Processors/CPU0'):
        answer = base.alias_redirect(target)
    assert answer.status_code == 404
    assert 'Location' not in answer.headers
