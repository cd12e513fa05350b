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

"""A small client of Ironic's REST API (noauth), with bounded waits."""

import time

import requests

HEADERS = {'X-OpenStack-Ironic-API-Version': 'latest'}
#: Longest wait for one provisioning step of one node.
STEP_TIMEOUT = 240.0
POLL = 0.5


class StepFailed(AssertionError):
    """A node did not reach its state; carries Ironic's last_error."""


class Ironic:

    def __init__(self, url):
        self.url = url + '/v1'
        self.session = requests.Session()
        self.session.headers.update(HEADERS)

    def _call(self, method, path, want=(200, 201, 202, 204), **kwargs):
        response = self.session.request(method, self.url + path,
                                        timeout=60, **kwargs)
        if response.status_code not in want:
            raise AssertionError('%s %s: %s %s' % (
                method, path, response.status_code, response.text))
        return response.json() if response.content else None

    def get(self, path, **kwargs):
        return self._call('GET', path, **kwargs)

    def post(self, path, body, **kwargs):
        return self._call('POST', path, json=body, **kwargs)

    def put(self, path, body, **kwargs):
        return self._call('PUT', path, json=body, **kwargs)

    def patch(self, path, ops, **kwargs):
        return self._call('PATCH', path, json=ops, **kwargs)

    def node(self, ident):
        return self.get('/nodes/%s' % ident)

    def set_node(self, ident, **values):
        self.patch('/nodes/%s' % ident, [
            {'op': 'add', 'path': '/' + key, 'value': value}
            for key, value in values.items()])

    def provision(self, ident, target, **body):
        body['target'] = target
        self.put('/nodes/%s/states/provision' % ident, body)

    def wait(self, ident, state, timeout=STEP_TIMEOUT, what=None):
        """Wait until the node rests in ``state``; fail on an error."""
        deadline = time.monotonic() + timeout
        node = None
        while time.monotonic() < deadline:
            node = self.node(ident)
            if node['target_provision_state'] is None and not node.get(
                    'reservation'):
                if node['provision_state'] == state:
                    return node
                if node['provision_state'].endswith('failed') or (
                        node['provision_state'] != state
                        and node['last_error']):
                    break
            time.sleep(POLL)
        raise StepFailed('%s: node %s is %s (target %s), wanted %s; '
                         'last_error: %s' % (
                             what or state, node['name'] or ident,
                             node['provision_state'],
                             node['target_provision_state'], state,
                             node['last_error']))

    def wait_power(self, ident, state, timeout=STEP_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            node = self.node(ident)
            if node['power_state'] == state and not node[
                    'target_power_state']:
                return node
            time.sleep(POLL)
        raise StepFailed('node %s power is %s, wanted %s; last_error: %s'
                         % (ident, node['power_state'], state,
                            node['last_error']))
