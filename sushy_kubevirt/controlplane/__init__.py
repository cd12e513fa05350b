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

"""A real Kubernetes control plane for the tests and the demo.

``build``   builds kube-apiserver, kube-controller-manager and etcd
``pki``     the CAs, certificates and service-account key
``crds``    the KubeVirt and CDI CRDs from the real schemas
``server``  runs the three on loopback (``ControlPlane``)
``rbac``    the emulator's identity, bound to the shipped RBAC
"""
