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

"""Benchmarks: Ironic-shaped Redfish load against the emulator.

``python -m sushy_kubevirt.bench`` starts the simulator, the emulator (this
driver warm, on its live-read path, and sushy-tools' ``--fake`` driver) and a
load generator, each in its own process on 127.0.0.1, and prints a table of
latency, throughput and Kubernetes API calls per Redfish request.
"""
