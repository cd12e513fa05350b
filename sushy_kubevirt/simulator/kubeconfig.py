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

"""Write a kubeconfig pointing at the simulator (token user).

An HTTPS server's CA goes in as ``certificate-authority-data``.
"""

import base64

from sushy_kubevirt import files

TEMPLATE = """apiVersion: v1
kind: Config
clusters:
- name: sushy-kubevirt-sim
  cluster:
    server: {server}{ca}
users:
- name: {user}
  user:
    token: {token}
contexts:
- name: sushy-kubevirt-sim
  context:
    cluster: sushy-kubevirt-sim
    user: {user}
    namespace: {namespace}
current-context: sushy-kubevirt-sim
preferences: {{}}
"""


def render(server, token, namespace='default', user='sim-user',
           ca_pem=None):
    ca = ('\n    certificate-authority-data: '
          + base64.b64encode(ca_pem).decode()) if ca_pem else ''
    return TEMPLATE.format(server=server, token=token, namespace=namespace,
                           user=user, ca=ca)


def write(path, server, token, namespace='default', user='sim-user',
          ca_pem=None):
    """Write the kubeconfig (mode 0600, in one step); return its path."""
    return files.replace(path, render(server, token, namespace, user,
                                      ca_pem), 0o600)
